// Package certs holds an agent's TLS: the certificates of the server port
// (tls.internal_rpc), of the HTTPS API and of DNS over TLS, built from the
// config, watched for renewed files and reloaded; and what they decide on
// the server port: TLS offered or required, who may speak Raft, and
// whether a gossip member holds a server certificate of this datacenter.
package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil"
)

// watchInterval is how often the certificate files are looked at, so a
// renewed certificate is taken without a restart (SIGHUP takes it at once).
const watchInterval = 10 * time.Second

// Set is an agent's TLS configurators, each nil without a certificate or
// CA.
type Set struct {
	RPC, HTTPS, DNS *tlsutil.Configurator
	dc              string
}

// New builds the configurators of cfg for datacenter dc and domain; DNS's
// only with dnsTLS (ports.dns_tls on), as only DNS over TLS reads tls.dns.
func New(cfg config.TLS, dc, domain string, dnsTLS bool) (*Set, error) {
	s := &Set{dc: dc}
	var err error
	if s.RPC, err = newConfigurator(cfg.RPC, dc, domain); err != nil {
		return nil, fmt.Errorf("tls.internal_rpc: %w", err)
	}
	if s.HTTPS, err = newConfigurator(cfg.HTTPS, dc, domain); err != nil {
		return nil, fmt.Errorf("tls.https: %w", err)
	}
	if dnsTLS {
		if s.DNS, err = newConfigurator(cfg.DNS, dc, domain); err != nil {
			return nil, fmt.Errorf("tls.dns: %w", err)
		}
	}
	return s, nil
}

func newConfigurator(cfg tlsutil.Config, dc, domain string) (*tlsutil.Configurator, error) {
	if cfg.CertFile == "" && cfg.CAFile == "" {
		return nil, nil
	}
	cfg.Datacenter, cfg.Domain = dc, strings.TrimSuffix(domain, ".")
	return tlsutil.NewConfigurator(cfg)
}

func (s *Set) all() []*tlsutil.Configurator {
	var out []*tlsutil.Configurator
	for _, c := range []*tlsutil.Configurator{s.RPC, s.HTTPS, s.DNS} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Reload reads every certificate again from its files, up to the first
// that fails.
func (s *Set) Reload() error {
	for _, c := range s.all() {
		if err := c.Reload(); err != nil {
			return fmt.Errorf("reload TLS: %w", err)
		}
	}
	return nil
}

// Watch reloads each certificate when its files change, on loops owned by
// wg, until ctx ends.
func (s *Set) Watch(ctx context.Context, wg *sync.WaitGroup, logger *slog.Logger) {
	for _, c := range s.all() {
		wg.Go(func() { c.Watch(ctx, watchInterval, logger) })
	}
}

// SecureServerPort sets the server port's TLS from tls.internal_rpc: TLS
// offered when there is a certificate, required with verify_incoming; then
// only a certificate for server.<dc>.<domain> may speak Raft, and the peer
// check by gossip address (rc.Admit) steps aside for the certificates.
func (s *Set) SecureServerPort(rc *rpc.ServerConfig) {
	c := s.RPC
	if c == nil {
		return
	}
	rc.TLS = c.IncomingRPC()
	rc.RaftTLS = c.OutgoingRPC("")
	if c.RequireTLS() {
		rc.RequireTLS = true
		rc.RaftPeer = func(st tls.ConnectionState) bool { return c.PeerIsServer(st, "") }
		rc.Admit = nil
	}
}

// SecurePool makes the rpc pool speak TLS to the servers when
// tls.internal_rpc verifies outgoing connections.
func (s *Set) SecurePool(pc *rpc.PoolConfig) {
	if c := s.RPC; c != nil && c.OutgoingRPC("") != nil {
		pc.TLS, pc.Datacenter = c.OutgoingRPC, s.dc
	}
}

// VerifyServer checks, before the leader makes m a voter and before a
// bootstrap counts it, that m holds a server certificate of this
// datacenter, by a TLS handshake with its server port. Without
// verify_server_hostname every member with the server role passes (gossip
// keys keep strangers out of the pool).
func (s *Set) VerifyServer(ctx context.Context, m gossip.Member) error {
	c := s.RPC
	if c == nil || !c.Config().VerifyServerHostname {
		return nil
	}
	host, _, err := net.SplitHostPort(m.RPCAddr)
	if err != nil {
		return fmt.Errorf("server %s: bad RPC address %q", m.Node, m.RPCAddr)
	}
	tc := c.OutgoingRPC("").Clone()
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", m.RPCAddr)
	if err != nil {
		return fmt.Errorf("server %s: %w", m.Node, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write([]byte{rpc.TLSByte}); err != nil {
		return fmt.Errorf("server %s: %w", m.Node, err)
	}
	if err := tls.Client(conn, tc).HandshakeContext(ctx); err != nil {
		return fmt.Errorf("server %s holds no server certificate of datacenter %s: %w", m.Node, s.dc, err)
	}
	return nil
}
