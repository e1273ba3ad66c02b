package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil"
)

// tlsWatchInterval is how often the certificate files are looked at for a
// change, so a renewed certificate is taken without a restart (SIGHUP
// takes it at once).
const tlsWatchInterval = 10 * time.Second

// newTLS builds the TLS configurators of the server port and of HTTPS from
// the config, nil for each that has no certificate or CA.
func newTLS(cfg tlsutil.Config, dc, domain string) (*tlsutil.Configurator, error) {
	if cfg.CertFile == "" && cfg.CAFile == "" {
		return nil, nil
	}
	cfg.Datacenter, cfg.Domain = dc, strings.TrimSuffix(domain, ".")
	return tlsutil.NewConfigurator(cfg)
}

// tlsConfigurators returns the agent's TLS configurations, those it has:
// the server port's, the HTTPS API's and DNS over TLS's.
func (a *Agent) tlsConfigurators() []*tlsutil.Configurator {
	var out []*tlsutil.Configurator
	for _, c := range []*tlsutil.Configurator{a.tlsRPC, a.tlsHTTPS, a.tlsDNS} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// watchTLS reloads the certificates when their files change, until ctx
// ends.
func (a *Agent) watchTLS(ctx context.Context) {
	for _, c := range []*tlsutil.Configurator{a.tlsRPC, a.tlsHTTPS, a.tlsDNS} {
		if c != nil {
			a.loops.Go(func() { c.Watch(ctx, tlsWatchInterval, a.logger) })
		}
	}
}

// secureServerPort sets the TLS of the server port from tls.internal_rpc:
// TLS offered when there is a certificate, required with verify_incoming;
// then only a certificate for server.<dc>.<domain> may speak Raft, and
// the peer check by gossip address (pools.Peers.Admit) steps aside for the
// certificates.
func (a *Agent) secureServerPort(rc *rpc.ServerConfig) {
	c := a.tlsRPC
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

// verifyServer checks, before the leader makes m a voter and before a
// bootstrap counts it, that m holds a server certificate of this
// datacenter: a TLS handshake with its server port verifying the name
// server.<dc>.<domain>. Without verify_server_hostname every member with
// the server role passes (gossip keys keep strangers out of the pool).
func (a *Agent) verifyServer(ctx context.Context, m gossip.Member) error {
	c := a.tlsRPC
	if c == nil || !c.Config().VerifyServerHostname {
		return nil
	}
	tc := c.OutgoingRPC("")
	host, _, err := net.SplitHostPort(m.RPCAddr)
	if err != nil {
		return fmt.Errorf("server %s: bad RPC address %q", m.Node, m.RPCAddr)
	}
	tc = tc.Clone()
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
		return fmt.Errorf("server %s holds no server certificate of datacenter %s: %w", m.Node, a.cfg.Datacenter, err)
	}
	return nil
}
