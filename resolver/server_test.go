package resolver

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

func TestServerUDPAndTCP(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	if s.UDPAddr() != nil || s.TCPAddr() != nil {
		t.Fatalf("addresses before Start: got %v and %v, want nil", s.UDPAddr(), s.TCPAddr())
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	udp, tcp := s.UDPAddr().(*net.UDPAddr), s.TCPAddr().(*net.TCPAddr)
	if udp.Port == 0 || udp.Port != tcp.Port {
		t.Errorf("ports: got UDP %d and TCP %d, want the same free port", udp.Port, tcp.Port)
	}
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 5 * time.Second}
		reply, _, err := c.Exchange(query("web.service.cluster.", dns.TypeSRV), s.UDPAddr().String())
		if err != nil {
			t.Fatalf("%s exchange: %v", network, err)
		}
		if reply.Rcode != dns.RcodeSuccess || !reply.Authoritative || len(reply.Answer) != 2 || len(reply.Extra) != 2 {
			t.Errorf("%s reply: got rcode %s AA %v, %d answers, %d extra; want NOERROR AA 2 2",
				network, dns.RcodeToString[reply.Rcode], reply.Authoritative, len(reply.Answer), len(reply.Extra))
		}
	}
	// Over UDP a big answer is truncated and the client retries over TCP.
	big := newTestServer(t, manyInstances(100), nil)
	if err := big.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer big.Shutdown(context.Background())
	c := &dns.Client{Net: "udp", Timeout: 5 * time.Second}
	reply, _, err := c.Exchange(query("web.service.cluster.", dns.TypeA), big.UDPAddr().String())
	if err != nil || !reply.Truncated {
		t.Fatalf("UDP exchange of 100 answers: got %v, %v; want a truncated reply", reply, err)
	}
	c.Net = "tcp"
	reply, _, err = c.Exchange(query("web.service.cluster.", dns.TypeA), big.TCPAddr().String())
	if err != nil || reply.Truncated || len(reply.Answer) != 100 {
		t.Fatalf("TCP exchange of 100 answers: got %v; want all 100 untruncated", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: got %v, want nil", err)
	}
	c = &dns.Client{Net: "tcp", Timeout: time.Second}
	if _, _, err := c.Exchange(query("cluster.", dns.TypeSOA), tcp.String()); err == nil {
		t.Errorf("TCP exchange after Shutdown: got an answer, want an error")
	}
	if err := s.Start(); err == nil {
		t.Errorf("Start after Shutdown: got nil, want an error")
	}
}

func TestServerBindError(t *testing.T) {
	first := newTestServer(t, newFakeSource(), nil)
	if err := first.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer first.Shutdown(context.Background())

	cfg := DefaultConfig()
	cfg.Addr = first.UDPAddr().String()
	second, err := New(cfg, testZones(t), newFakeSource(), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	err = second.Start()
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), cfg.Addr) {
		t.Fatalf("Start on a taken address: got %v, want an error naming %s and \"address already in use\"", err, cfg.Addr)
	}
	if second.UDPAddr() != nil {
		t.Errorf("UDPAddr after a failed Start: got %v, want nil", second.UDPAddr())
	}
	if err := second.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after a failed Start: got %v, want nil", err)
	}

	// Only UDP taken: the TCP listener bound first must be released.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen udp: %v", err)
	}
	defer pc.Close()
	if _, _, err := listen(pc.LocalAddr().String(), 1); !errorsIsAddrInUse(err) {
		t.Fatalf("listen on a taken UDP port: got %v, want address already in use", err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatalf("TCP port still bound after a failed listen: %v", err)
	}
	ln.Close()
}

func errorsIsAddrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

func TestServerShutdownBeforeStart(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown before Start: got %v, want nil", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate(): got %v, want nil", err)
	}
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no port", func(c *Config) { c.Addr = "127.0.0.1" }, "Addr"},
		{"bad port", func(c *Config) { c.Addr = "127.0.0.1:dns" }, "Addr"},
		{"port too big", func(c *Config) { c.Addr = "127.0.0.1:65536" }, "Addr"},
		{"small UDP size", func(c *Config) { c.UDPSize = 511 }, "UDPSize"},
		{"zero read timeout", func(c *Config) { c.ReadTimeout = 0 }, "ReadTimeout"},
		{"negative write timeout", func(c *Config) { c.WriteTimeout = -time.Second }, "WriteTimeout"},
		{"zero query timeout", func(c *Config) { c.QueryTimeout = 0 }, "QueryTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate: got %v, want an error naming %s", err, tt.field)
			}
			if _, err := New(cfg, testZones(t), newFakeSource(), nil); err == nil {
				t.Errorf("New: got nil error, want one naming %s", tt.field)
			}
		})
	}
}

func TestNewNilDependencies(t *testing.T) {
	zs := testZones(t)
	if _, err := New(DefaultConfig(), testZones(t), nil, nil); err == nil {
		t.Errorf("New with a nil source: got nil error")
	}
	zone := func(domain string) *zones.Zone {
		cfg := zones.DefaultConfig()
		cfg.Domain = domain
		z, err := zones.New(cfg)
		if err != nil {
			t.Fatalf("zones.New: %v", err)
		}
		return z
	}
	tests := []struct {
		name string
		zs   []*zones.Zone
		want string // in the error; "" for none
	}{
		{"no zones", nil, "no zone"},
		{"empty zones", []*zones.Zone{}, "no zone"},
		{"nil zone", []*zones.Zone{zs[0], nil}, "zone 1 is nil"},
		{"same domain twice", []*zones.Zone{zs[0], zone("Cluster")}, `zone "cluster." is given twice`},
		{"alt under the primary", []*zones.Zone{zs[0], zone("alt.cluster.")}, `zone "alt.cluster." is under zone "cluster."`},
		{"primary under the alt", []*zones.Zone{zone("alt.cluster."), zs[0]}, ""},
		{"one zone", zs[:1], ""},
		{"two zones", zs, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(DefaultConfig(), tt.zs, newFakeSource(), nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("New: got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("New: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestServerSurvivesGarbage sends packets that do not parse, over UDP and
// TCP, and checks the server still answers a proper query afterwards.
func TestServerSurvivesGarbage(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	addr := s.UDPAddr().String()
	junk := [][]byte{{}, {0x01}, []byte("not a dns message at all"), make([]byte, 12), bytes.Repeat([]byte{0xff}, 600)}
	uc, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	for _, j := range junk {
		if _, err := uc.Write(j); err != nil {
			t.Fatal(err)
		}
	}
	tc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// A length prefix promising more than is sent, then the close.
	_, _ = tc.Write([]byte{0x00, 0x40, 0xde, 0xad})
	_ = tc.Close()
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 5 * time.Second}
		reply, _, err := c.Exchange(query("web.service.cluster.", dns.TypeA), addr)
		if err != nil || reply.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s after garbage: got %v, %v; want an answer", network, reply, err)
		}
	}
}
