package agent_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestDNSAttacksOnASecuredAgent plays an attacker at 127.0.0.66 against
// the DNS port of an agent with ACLs on (deny by default, DNS readable by
// the anonymous token, as docs/operating/security.md sets it up):
//
//   - reflection: 1,000 spoofable UDP queries a second for a large
//     service's SRV records with EDNS 4096; the bytes sent back must stay
//     within 3 times the bytes sent, and no reply over 512 bytes;
//   - TCP lockout: 1,000 TCP connections held open from one address;
//     another address must still get its answer over TCP.
func TestDNSAttacksOnASecuredAgent(t *testing.T) {
	t.Parallel()
	cfg := aclServerConfig(t, "s1")
	// The attacker would keep each connection open by sending a query
	// within each timeout; the test lengthens the timeouts instead.
	cfg.Resolver.ReadTimeout, cfg.Resolver.TCPIdleTimeout = time.Minute, time.Minute
	s := agenttest.Start(t, cfg)
	waitManagement(t, s)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{
		"Name": "dns-read", "Rules": `service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }`}, nil)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/acl/token/"+anonymousID,
		map[string]any{"Policies": []map[string]string{{"Name": "dns-read"}}}, nil)
	const n = 30
	for i := range n {
		id := strconv.Itoa(i + 1)
		mustCall(t, s, mgmtSecret, "PUT", "/v1/agent/service/register",
			map[string]any{"ID": "big-" + id, "Name": "big", "Port": 80, "Address": "10.2.0." + id}, nil)
	}
	addr := s.DNSAddr().String()
	srv := new(dns.Msg)
	srv.SetQuestion("big.service.cluster.", dns.TypeSRV)
	waittest.For(t, aclTestWait, "the big service in DNS", func() error {
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(srv, addr)
		if err != nil {
			return err
		}
		if len(r.Answer) != n {
			return fmt.Errorf("%d answers, want %d", len(r.Answer), n)
		}
		return nil
	})

	t.Run("reflection", func(t *testing.T) {
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(attackerIP)}, s.DNSAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		q := srv.Copy()
		q.SetEdns0(4096, false)
		wire, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		in, out, largest := 0, 0, 0
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 65535)
			for {
				k, err := c.Read(buf)
				if err != nil {
					return // the read deadline, once the attack is over
				}
				out += k
				largest = max(largest, k)
			}
		}()
		start := time.Now()
		sent := 0
		for elapsed := time.Duration(0); elapsed < 1500*time.Millisecond; elapsed = time.Since(start) {
			for due := int(elapsed / time.Millisecond); sent < due; sent++ { // 1,000 a second
				wire[0], wire[1] = byte(sent>>8), byte(sent)
				if _, err := c.Write(wire); err != nil {
					t.Fatal(err)
				}
				in += len(wire)
			}
			time.Sleep(2 * time.Millisecond) // pacing the sender, not waiting for a condition
		}
		if err := c.SetReadDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		<-done
		t.Logf("%d queries, %d bytes in, %d bytes out (%.2f times), largest reply %d bytes", sent, in, out, float64(out)/float64(in), largest)
		if out > 3*in {
			t.Errorf("%d bytes sent to the spoofed address for %d received: %.2f times, want at most 3", out, in, float64(out)/float64(in))
		}
		if largest > dns.MinMsgSize {
			t.Errorf("a %d-byte UDP reply to an address that never proved itself, want at most 512", largest)
		}
	})

	t.Run("TCP lockout", func(t *testing.T) {
		attacker := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerIP)}, Timeout: 5 * time.Second}
		for i := range 1000 {
			c, err := attacker.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("attacker's connection %d: %v", i+1, err)
			}
			defer c.Close()
		}
		victim := &dns.Client{Net: "tcp", Timeout: 2 * time.Second,
			Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.67")}, Timeout: 2 * time.Second}}
		waittest.For(t, 10*time.Second, "an answer over TCP to a second address", func() error {
			r, _, err := victim.Exchange(srv, addr)
			if err == nil && len(r.Answer) != n {
				err = errors.New(r.String())
			}
			return err
		})
	})
}
