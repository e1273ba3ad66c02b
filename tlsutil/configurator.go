package tlsutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Configurator hands out the tls.Configs of one Config and reloads its
// files. The configs it returns read the certificates and CA current at
// each handshake, through crypto/tls's callbacks, so that Reload applies
// to new connections of listeners and dialers built earlier.
//
// All methods may be called from any goroutine.
type Configurator struct {
	cfg        Config
	minVersion uint16

	// material is what the files held when last loaded successfully.
	material atomic.Pointer[material]

	reloadMu sync.Mutex // serializes Reload, guards seen
	seen     stamps     // the files as they were at the last load (or try)
}

// material is the parsed content of a Config's files.
type material struct {
	cert  *tls.Certificate // nil without CertFile
	roots *x509.CertPool   // nil without CAFile
}

// NewConfigurator checks cfg and loads its files.
func NewConfigurator(cfg Config) (*Configurator, error) {
	if errs := cfg.checkFields(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	minVersion, _ := ParseMinVersion(cfg.MinVersion) // checked by checkFields
	c := &Configurator{cfg: cfg, minVersion: minVersion}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Config returns the configuration c was built with.
func (c *Configurator) Config() Config { return c.cfg }

// Enabled reports whether c has a certificate to serve TLS with
// (CertFile is set).
func (c *Configurator) Enabled() bool { return c.cfg.CertFile != "" }

// RequireTLS reports whether incoming connections must use TLS and
// present a certificate of the CA (VerifyIncoming).
func (c *Configurator) RequireTLS() bool { return c.cfg.VerifyIncoming }

// Reload reads the files again. When they are unreadable or invalid it
// returns the error and keeps the certificates it had, so that a
// half-written file never takes TLS down; the next Reload tries again.
func (c *Configurator) Reload() error {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	c.seen = statFiles(c.cfg)
	m, err := load(c.cfg)
	if err != nil {
		return err
	}
	c.material.Store(m)
	return nil
}

// Watch checks the files' modification times and sizes every interval
// and reloads them when one changed, until ctx ends. A reload that fails
// is logged (at warn level, once per change) and the previous
// certificates stay in use. Its caller runs it on a goroutine it waits
// for; SIGHUP and the like call Reload directly.
func (c *Configurator) Watch(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "tls")
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !c.changed() {
			continue
		}
		if err := c.Reload(); err != nil {
			logger.Warn("TLS files changed but do not load; the previous ones stay in use", "err", err)
			continue
		}
		logger.Info("TLS files reloaded", "cert_file", c.cfg.CertFile, "ca_file", c.cfg.CAFile)
	}
}

// changed reports whether a file differs from when it was last loaded.
func (c *Configurator) changed() bool {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	return statFiles(c.cfg) != c.seen
}

// IncomingRPC returns the server side's config of the server port, or
// nil when c has no certificate. It presents c's certificate; a peer must
// present one signed by the CA with VerifyIncoming, and may without it (a
// server that dials presents its own, which PeerIsServer then reads).
func (c *Configurator) IncomingRPC() *tls.Config {
	if !c.Enabled() {
		return nil
	}
	return c.serverConfig(true)
}

// IncomingHTTPS returns the config of the HTTPS listener, or nil when c
// has no certificate. Clients must present a certificate of the CA with
// VerifyIncoming, and are not asked for one otherwise.
func (c *Configurator) IncomingHTTPS() *tls.Config {
	if !c.Enabled() {
		return nil
	}
	return c.serverConfig(false)
}

func (c *Configurator) serverConfig(rpc bool) *tls.Config {
	return &tls.Config{
		MinVersion: c.minVersion,
		// Certificates and ClientCAs are fields, not callbacks: a config
		// built at each handshake from the material current then is how
		// a Reload reaches a listener already running.
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return c.handshakeConfig(rpc), nil
		},
	}
}

func (c *Configurator) handshakeConfig(rpc bool) *tls.Config {
	m := c.material.Load()
	cfg := &tls.Config{
		MinVersion:   c.minVersion,
		Certificates: []tls.Certificate{*m.cert},
		ClientCAs:    m.roots,
		// A resumed session skips the chain check against the CA
		// current now; RPC peers keep their sessions for long, so
		// resumption saves nothing worth that.
		SessionTicketsDisabled: rpc,
	}
	switch {
	case c.cfg.VerifyIncoming:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case rpc && m.roots != nil:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		// Without a CA there is nothing to verify a certificate against
		// (crypto/tls would use the system's roots).
		cfg.ClientAuth = tls.NoClientCert
	}
	return cfg
}

// OutgoingRPC returns the config for dialing a server of datacenter dc
// ("" means Config.Datacenter) on its server port, or nil when outgoing
// connections are plain (neither VerifyOutgoing nor
// VerifyServerHostname). The server's chain is verified against the CA;
// with VerifyServerHostname its certificate must also be for
// server.<dc>.<domain>. c's certificate is presented when the server asks
// for one.
//
// The chain is checked in VerifyConnection, against the CA current at
// each handshake, instead of by crypto/tls against a RootCAs fixed here:
// a Raft layer keeps one config for its whole life, and a Reload must
// reach it. InsecureSkipVerify only turns off crypto/tls's own check,
// which VerifyConnection replaces; it is never without it.
func (c *Configurator) OutgoingRPC(dc string) *tls.Config {
	if !c.cfg.VerifyOutgoing && !c.cfg.VerifyServerHostname {
		return nil
	}
	if dc == "" {
		dc = c.cfg.Datacenter
	}
	var name string
	if c.cfg.VerifyServerHostname {
		name = ServerName(dc, c.cfg.Domain)
	}
	return &tls.Config{
		MinVersion:         c.minVersion,
		ServerName:         name, // SNI only; the name is checked below
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return c.verifyServer(cs, name)
		},
		GetClientCertificate: c.clientCertificate,
	}
}

// OutgoingHTTPS returns the config of an HTTPS client of the agent's API
// (the CLI): the server is verified against the CA (the system's roots
// without CAFile) and the URL's host name, as net/http does; c's
// certificate is presented when asked for. The CA is read when this is
// called: build a new config after a Reload.
func (c *Configurator) OutgoingHTTPS() *tls.Config {
	return &tls.Config{
		MinVersion:           c.minVersion,
		RootCAs:              c.material.Load().roots,
		GetClientCertificate: c.clientCertificate,
	}
}

// PeerIsServer reports whether the peer of a connection c served (or
// dialed) proved to be a server of datacenter dc ("" means
// Config.Datacenter): its certificate chain was verified against the CA
// during the handshake, and the certificate is for server.<dc>.<domain>.
// A connection without a verified certificate is not a server's.
func (c *Configurator) PeerIsServer(state tls.ConnectionState, dc string) bool {
	if dc == "" {
		dc = c.cfg.Datacenter
	}
	if len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return false
	}
	return state.VerifiedChains[0][0].VerifyHostname(ServerName(dc, c.cfg.Domain)) == nil
}

func (c *Configurator) verifyServer(cs tls.ConnectionState, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsutil: the server presented no certificate")
	}
	roots := c.material.Load().roots
	if roots == nil { // Validate requires CAFile with VerifyOutgoing; kept for safety
		return errors.New("tlsutil: no CA to verify the server's certificate against (CAFile)")
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		DNSName:       name, // "" checks no name
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, ic := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(ic)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tlsutil: server certificate: %w", err)
	}
	return nil
}

// clientCertificate presents c's certificate, or none without one (the
// server then refuses us if it requires one, which is its call).
func (c *Configurator) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if m := c.material.Load(); m.cert != nil {
		return m.cert, nil
	}
	return &tls.Certificate{}, nil
}

// load reads and parses cfg's files; each error names its field.
func load(cfg Config) (*material, error) {
	var m material
	var errs []error
	if cfg.CAFile != "" {
		if data, err := os.ReadFile(cfg.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("tlsutil: CAFile: %w", err))
		} else if certs, err := parseCertsPEM(data); err != nil {
			errs = append(errs, fmt.Errorf("tlsutil: CAFile: %s: %w", cfg.CAFile, err))
		} else {
			m.roots = x509.NewCertPool()
			for _, ca := range certs {
				m.roots.AddCert(ca)
			}
		}
	}
	if cfg.CertFile != "" && cfg.KeyFile != "" {
		certPEM, certErr := os.ReadFile(cfg.CertFile)
		if certErr != nil {
			errs = append(errs, fmt.Errorf("tlsutil: CertFile: %w", certErr))
		}
		keyPEM, keyErr := os.ReadFile(cfg.KeyFile)
		if keyErr != nil {
			errs = append(errs, fmt.Errorf("tlsutil: KeyFile: %w", keyErr))
		}
		if certErr == nil && keyErr == nil {
			cert, err := loadKeyPair(cfg, certPEM, keyPEM, m.roots)
			if err != nil {
				errs = append(errs, err)
			}
			m.cert = cert
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &m, nil
}

// loadKeyPair parses a certificate and its key and, when roots is set,
// checks that the certificate is valid now under them: a certificate of
// another CA, or an expired one, is a mistake to report at load rather
// than as every peer's refusal.
func loadKeyPair(cfg Config, certPEM, keyPEM []byte, roots *x509.CertPool) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: CertFile %s and KeyFile %s: %w", cfg.CertFile, cfg.KeyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tlsutil: CertFile: %s: %w", cfg.CertFile, err)
		}
	}
	if roots != nil {
		opts := x509.VerifyOptions{
			Roots:         roots,
			Intermediates: x509.NewCertPool(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
		}
		for _, der := range cert.Certificate[1:] {
			if ic, err := x509.ParseCertificate(der); err == nil {
				opts.Intermediates.AddCert(ic)
			}
		}
		if _, err := cert.Leaf.Verify(opts); err != nil {
			return nil, fmt.Errorf("tlsutil: CertFile: %s does not verify against CAFile %s: %w", cfg.CertFile, cfg.CAFile, err)
		}
	}
	return &cert, nil
}

// stamps identify the versions of a Config's files: CAFile, CertFile,
// KeyFile, in that order.
type stamps [3]stamp

// stamp is a file's modification time and size; zero when the file is
// not set or cannot be read.
type stamp struct {
	mod  int64
	size int64
}

func statFiles(cfg Config) stamps {
	var s stamps
	for i, path := range []string{cfg.CAFile, cfg.CertFile, cfg.KeyFile} {
		if path == "" {
			continue
		}
		if fi, err := os.Stat(path); err == nil {
			s[i] = stamp{mod: fi.ModTime().UnixNano(), size: fi.Size()}
		}
	}
	return s
}
