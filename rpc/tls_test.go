package rpc

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/tlsutil"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// tlsServerConfig is a server config for tests with TLS from conf: TLS
// required, Raft only from servers of dc1, Raft dialed over TLS.
func tlsServerConfig(conf *tlsutil.Configurator) ServerConfig {
	cfg := testConfig()
	cfg.TLS = conf.IncomingRPC()
	cfg.RequireTLS = conf.RequireTLS()
	cfg.RaftTLS = conf.OutgoingRPC("")
	cfg.RaftPeer = func(st tls.ConnectionState) bool { return conf.PeerIsServer(st, "") }
	return cfg
}

// tlsPool returns a pool, closed at the end of the test, dialing servers
// of dc with TLS from conf.
func tlsPool(t *testing.T, conf *tlsutil.Configurator, dc string) *Pool {
	t.Helper()
	cfg := DefaultPoolConfig()
	cfg.DialTimeout = 2 * time.Second
	cfg.Datacenter = dc
	cfg.TLS = conf.OutgoingRPC
	p, err := NewPool(cfg, nil)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// debugLogger returns a debug logger writing to the buffer it returns.
func debugLogger() (*slog.Logger, *lockedBuffer) {
	logs := &lockedBuffer{}
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}

// waitLogged waits for the server's log to hold every part of want.
func waitLogged(t *testing.T, logs *lockedBuffer, want ...string) {
	t.Helper()
	waitFor(t, 5*time.Second, "log line "+strings.Join(want, ", "), func() bool {
		out := logs.String()
		for _, w := range want {
			if !strings.Contains(out, w) {
				return false
			}
		}
		return true
	})
}

func echoCall(t *testing.T, p *Pool, addr string) error {
	t.Helper()
	args := &EchoArgs{Payload: Payload{Name: "tls"}}
	var reply EchoReply
	err := p.Call(testCtx(t), addr, "Echo.Echo", args, &reply)
	if err == nil && reply.Payload.Name != "tls" {
		t.Errorf("reply: got %q, want %q", reply.Payload.Name, "tls")
	}
	return err
}

func TestTLSCall(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	s, _ := startServer(t, tlsServerConfig(ca.Configurator(t, true, "dc1")))
	for _, role := range []struct {
		name   string
		server bool
	}{{"client agent", false}, {"server", true}} {
		p := tlsPool(t, ca.Configurator(t, role.server, "dc1"), "dc1")
		if err := echoCall(t, p, s.Addr().String()); err != nil {
			t.Errorf("%s: Call over TLS: %v", role.name, err)
		}
	}
}

func TestRequireTLSRefusesPlain(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	logger, logs := debugLogger()
	s, _ := startServerLogged(t, tlsServerConfig(ca.Configurator(t, true, "dc1")), logger)
	p, _ := newPool(t)
	err := echoCall(t, p, s.Addr().String())
	if !errors.Is(err, ErrTransport) {
		t.Errorf("plain Call to a server requiring TLS: got %v, want ErrTransport", err)
	}
	waitLogged(t, logs, "plain connection where TLS is required", "kind=rpc", "level=DEBUG")
	if n := s.sessionsServed.Load(); n != 0 {
		t.Errorf("sessions served: got %d, want 0", n)
	}
}

func TestTLSByteWithoutTLS(t *testing.T) {
	t.Parallel()
	logger, logs := debugLogger()
	s, _ := startServerLogged(t, testConfig(), logger)
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{TLSByte}); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, conn, 5*time.Second)
	waitLogged(t, logs, "TLS is not configured")
}

func TestOtherCAClientRefused(t *testing.T) {
	t.Parallel()
	ours, theirs := tlsutiltest.NewCA(t), tlsutiltest.NewCA(t)
	logger, logs := debugLogger()
	s, _ := startServerLogged(t, tlsServerConfig(ours.Configurator(t, true, "dc1")), logger)

	// The client trusts our CA, so it accepts the server, but its own
	// certificate is of another CA.
	conf := ours.Configurator(t, false, "dc1")
	certFile, keyFile := theirs.Issue(t, false, "dc1")
	theirCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultPoolConfig()
	cfg.DialTimeout = 2 * time.Second
	cfg.Datacenter = "dc1"
	cfg.TLS = func(dc string) *tls.Config {
		c := conf.OutgoingRPC(dc)
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &theirCert, nil }
		return c
	}
	p, err := NewPool(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := echoCall(t, p, s.Addr().String()); !errors.Is(err, ErrTransport) {
		t.Errorf("Call with a certificate of another CA: got %v, want ErrTransport", err)
	}
	waitLogged(t, logs, "TLS handshake failed")
	if n := s.sessionsServed.Load(); n != 0 {
		t.Errorf("sessions served: got %d, want 0", n)
	}

	// A client that trusts only the other CA refuses our server.
	p2 := tlsPool(t, theirs.Configurator(t, false, "dc1"), "dc1")
	err = echoCall(t, p2, s.Addr().String())
	if !errors.Is(err, ErrTransport) || !errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), "TLS handshake") {
		t.Errorf("Call to a server of another CA: got %v, want a TLS handshake error, not sent", err)
	}
}

func TestCallDCVerifiesDatacenter(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	dc2, _ := startServer(t, tlsServerConfig(ca.Configurator(t, true, "dc2")))
	addr := dc2.Addr().String()
	// A dc1 server forwarding to dc2.
	p := tlsPool(t, ca.Configurator(t, true, "dc1"), "dc1")

	err := echoCall(t, p, addr)
	if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "server.dc1.cluster") {
		t.Errorf("Call (dc1) to a dc2 server: got %v, want a transport error naming server.dc1.cluster", err)
	}
	var reply EchoReply
	if err := p.CallDC(testCtx(t), "DC2", addr, "Echo.Echo", &EchoArgs{}, &reply); err != nil {
		t.Errorf("CallDC(dc2) to a dc2 server: %v", err)
	}
	// The failed dc1 dial left no session that dc1 calls could use.
	if err := echoCall(t, p, addr); !errors.Is(err, ErrTransport) {
		t.Errorf("Call (dc1) after CallDC(dc2): got %v, want ErrTransport", err)
	}
}

// acceptOne accepts one connection of l in the background.
func acceptOne(l *Layer) <-chan net.Conn {
	c := make(chan net.Conn, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			close(c)
			return
		}
		c <- conn
	}()
	return c
}

func TestRaftOverTLS(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	a, _ := startServer(t, tlsServerConfig(ca.Configurator(t, true, "dc1")))
	b, _ := startServer(t, tlsServerConfig(ca.Configurator(t, true, "dc1")))

	accepted := acceptOne(a.RaftLayer())
	conn, err := b.RaftLayer().Dial(a.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	if _, ok := conn.(*tls.Conn); !ok {
		t.Errorf("Dial returned a %T, want a *tls.Conn", conn)
	}
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := within(t, accepted, 5*time.Second, "Accept")
	if got == nil {
		t.Fatal("Accept failed")
	}
	defer got.Close()
	if _, ok := got.(*tls.Conn); !ok {
		t.Errorf("Accept returned a %T, want a *tls.Conn", got)
	}
	buf := make([]byte, 4)
	_ = got.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "ping" {
		t.Errorf("read: got %q, %v; want \"ping\"", buf, err)
	}
}

func TestRaftRefusedToNonServers(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	a, _ := startServer(t, tlsServerConfig(ca.Configurator(t, true, "dc1")))
	addr := a.Addr().String()
	client := ca.Configurator(t, false, "dc1")

	// The client agent's certificate does RPC...
	if err := echoCall(t, tlsPool(t, client, "dc1"), addr); err != nil {
		t.Fatalf("RPC with a client certificate: %v", err)
	}
	// ...but not Raft; nor does a server of dc2, nor plain Raft.
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"client certificate", client.OutgoingRPC("dc1")},
		{"dc2 server certificate", ca.Configurator(t, true, "dc2").OutgoingRPC("dc1")},
		{"plain", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, logs := debugLogger()
			cfg := tlsServerConfig(ca.Configurator(t, true, "dc1"))
			cfg.RequireTLS = false // so that plain Raft reaches the peer check
			s, _ := startServerLogged(t, cfg, logger)
			accepted := acceptOne(s.RaftLayer())
			conn, err := newLayer(tc.cfg).Dial(s.Addr().String(), 2*time.Second)
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer conn.Close()
			expectClosed(t, conn, 5*time.Second)
			waitLogged(t, logs, "refused connection: Raft")
			select {
			case c := <-accepted:
				if c != nil {
					c.Close()
					t.Error("the Raft layer accepted the connection")
				}
			default:
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	type asked struct {
		remote net.Addr
		kind   byte
	}
	seen := make(chan asked, 10)
	cfg := testConfig()
	cfg.Admit = func(remote net.Addr, kind byte) error {
		seen <- asked{remote, kind}
		if kind == RPCByte {
			return errors.New("not a member of the LAN pool")
		}
		return nil
	}
	logger, logs := debugLogger()
	s, _ := startServerLogged(t, cfg, logger)
	p, _ := newPool(t)
	if err := echoCall(t, p, s.Addr().String()); !errors.Is(err, ErrTransport) {
		t.Errorf("Call refused by Admit: got %v, want ErrTransport", err)
	}
	got := within(t, seen, 5*time.Second, "Admit")
	if got.kind != RPCByte || !strings.HasPrefix(got.remote.String(), "127.0.0.1:") {
		t.Errorf("Admit asked about %v, kind %d; want 127.0.0.1:*, RPCByte", got.remote, got.kind)
	}
	// At WARN, naming the peer: a server refusing another's traffic says
	// so where an operator looks.
	waitLogged(t, logs, `level=WARN msg="refused connection: not admitted"`, "not a member of the LAN pool", "kind=rpc", "peer=127.0.0.1:")

	accepted := acceptOne(s.RaftLayer())
	conn, err := s.RaftLayer().Dial(s.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	if c := within(t, accepted, 5*time.Second, "Accept"); c == nil {
		t.Error("Raft admitted by Admit was not accepted")
	} else {
		c.Close()
	}
	if got := within(t, seen, 5*time.Second, "Admit"); got.kind != RaftByte {
		t.Errorf("Admit asked about kind %d, want RaftByte", got.kind)
	}
}

func TestTLSConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*ServerConfig)
		want   string
	}{
		{"RequireTLS without TLS", func(c *ServerConfig) { c.RequireTLS = true }, "RequireTLS"},
		{"RaftPeer without TLS", func(c *ServerConfig) { c.RaftPeer = func(tls.ConnectionState) bool { return true } }, "RaftPeer"},
		{"negative WriteRate", func(c *ServerConfig) { c.WriteRate = -1 }, "WriteRate"},
		{"WriteRate without burst", func(c *ServerConfig) { c.WriteRate, c.WriteBurst = 5, 0 }, "WriteBurst"},
	} {
		cfg := testConfig()
		tc.change(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	pc := DefaultPoolConfig()
	pc.TLS = func(string) *tls.Config { return nil }
	if err := pc.Validate(); err == nil || !strings.Contains(err.Error(), "Datacenter") {
		t.Errorf("PoolConfig with TLS and no Datacenter: got %v, want an error naming Datacenter", err)
	}
}
