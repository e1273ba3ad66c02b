package agent_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

const tlsWait = 20 * time.Second

// withTLS gives cfg a certificate of ca for a server (or a client) of dc,
// with every verification on.
func withTLS(t *testing.T, cfg config.Config, ca *tlsutiltest.CA, server bool, dc string) config.Config {
	cfg.TLS.RPC = ca.Config(t, server, dc)
	return cfg
}

// servedCert returns the certificate the server port at addr presents.
func servedCert(t *testing.T, addr string, ca *tlsutiltest.CA) *x509.Certificate {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte{rpc.TLSByte}); err != nil {
		t.Fatal(err)
	}
	client := ca.Configurator(t, false, "dc1")
	tc := client.OutgoingRPC("dc1").Clone()
	tc.ServerName = "server.dc1.cluster"
	tconn := tls.Client(conn, tc)
	if err := tconn.Handshake(); err != nil {
		t.Fatalf("handshake with %s: %v", addr, err)
	}
	return tconn.ConnectionState().PeerCertificates[0]
}

// TestTLSCluster runs a three-server datacenter and a client over mutual
// TLS with server names verified: it elects, replicates and answers DNS;
// a client holding a certificate of another CA gets nothing through, a
// server holding dc2's certificate never becomes a voter of dc1, and a
// certificate rotation (new files, reload) is taken by new connections
// while the cluster keeps working.
func TestTLSCluster(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfgs := agenttest.DatacenterConfigs(t, "dc1", 3)
	for i := range cfgs {
		cfgs[i] = withTLS(t, cfgs[i], ca, true, "dc1")
	}
	cl := agenttest.StartConfigs(t, cfgs)
	joins := []string{cl.GossipAddr(0), cl.GossipAddr(1), cl.GossipAddr(2)}
	c1 := agenttest.Start(t, withTLS(t, agenttest.ClientConfig(t, "c1", joins...), ca, false, "dc1"))

	mustCall(t, c1, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80}, nil)
	waittest.For(t, tlsWait, "web in DNS on every agent", func() error {
		for _, a := range append(slices.Clone(cl.Agents), c1) {
			if rc := dnsRcode(t, a, "web.service.cluster"); rc != dns.RcodeSuccess {
				return fmt.Errorf("%s: %s", a.HTTPAddr(), dns.RcodeToString[rc])
			}
		}
		return nil
	})

	// A client agent with a certificate of another CA reaches no server.
	stranger := tlsutiltest.NewCA(t)
	c2 := agenttest.Start(t, withTLS(t, agenttest.ClientConfig(t, "c2", joins...), stranger, false, "dc1"))
	code, body := call(t, c2, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "evil", "Port": 80})
	if code == http.StatusOK {
		t.Fatalf("register through a client of another CA: got 200 %s", body)
	}
	var services map[string][]string
	mustCall(t, c1, "", "GET", "/v1/catalog/services", nil, &services)
	if _, ok := services["evil"]; ok {
		t.Fatal("a client of another CA wrote to the catalog")
	}

	// A server certificate of dc2, in dc1's gossip pool with the server
	// role, is no server of dc1: the leader does not make it a voter.
	s4cfg := withTLS(t, agenttest.ServerConfig(t, "s4", 0, joins...), ca, true, "dc2")
	s4cfg.TLS.RPC.Datacenter = "dc1"
	agenttest.Start(t, s4cfg)
	leader := leaderAgent(t, cl)
	waittest.For(t, tlsWait, "the leader to see s4 in gossip", func() error {
		if code, _ := call(t, c1, "", "GET", "/v1/catalog/node/s4", nil); code != http.StatusOK {
			return fmt.Errorf("s4 not registered yet: %d", code)
		}
		return nil
	})
	if err := agent.Reconcile(context.Background(), leader); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if voters := agent.RaftVoters(leader); slices.Contains(voters, "s4") || len(voters) != 3 {
		t.Fatalf("voters: got %v, want s1, s2, s3 only", voters)
	}

	// Rotation: every server gets a new certificate in the same files.
	before := servedCert(t, cl.RPCAddr(0), ca)
	for i, a := range cl.Agents {
		cert, key := ca.Issue(t, true, "dc1")
		rotate(t, cert, cfgs[i].TLS.RPC.CertFile)
		rotate(t, key, cfgs[i].TLS.RPC.KeyFile)
		if err := a.Reload(); err != nil {
			t.Fatalf("reload server %d: %v", i, err)
		}
	}
	if after := servedCert(t, cl.RPCAddr(0), ca); after.SerialNumber.Cmp(before.SerialNumber) == 0 {
		t.Fatal("the server port still presents the old certificate after a reload")
	}
	c3 := agenttest.Start(t, withTLS(t, agenttest.ClientConfig(t, "c3", joins...), ca, false, "dc1"))
	mustCall(t, c3, "", "PUT", "/v1/agent/service/register", map[string]any{"Name": "api", "Port": 81}, nil)
	waittest.For(t, tlsWait, "api in DNS after the rotation", func() error {
		if rc := dnsRcode(t, c1, "api.service.cluster"); rc != dns.RcodeSuccess {
			return fmt.Errorf("%s", dns.RcodeToString[rc])
		}
		return nil
	})
}

// leaderAgent returns the server agent of cl that leads.
func leaderAgent(t *testing.T, cl *agenttest.Cluster) *agent.Agent {
	t.Helper()
	var leader *agent.Agent
	waittest.For(t, tlsWait, "a leader", func() error {
		for i, a := range cl.Agents {
			if agent.RaftLeader(a) == cl.RPCAddr(i) {
				leader = a
				return nil
			}
		}
		return fmt.Errorf("no leader yet")
	})
	return leader
}

// rotate replaces the file at dst with the one at src, as a certificate
// renewal does.
func rotate(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRegisterThroughClient measures a registration through a client
// agent (HTTP to the client, RPC to the server, Raft apply), with the
// server port plain and over mutual TLS:
//
//	go test -run '^$' -bench RegisterThroughClient -benchtime 2000x ./agent/
func BenchmarkRegisterThroughClient(b *testing.B) {
	for _, secure := range []bool{false, true} {
		b.Run(fmt.Sprintf("tls=%v", secure), func(b *testing.B) {
			scfg := agenttest.ServerConfig(b, "s1", 1)
			ccfg := agenttest.ClientConfig(b, "c1", agenttest.GossipAddr(scfg))
			if secure {
				ca := tlsutiltest.NewCA(b)
				scfg.TLS.RPC = ca.Config(b, true, "dc1")
				ccfg.TLS.RPC = ca.Config(b, false, "dc1")
			}
			agenttest.Start(b, scfg)
			c := agenttest.Start(b, ccfg)
			url := "http://" + c.HTTPAddr().String() + "/v1/agent/service/register"
			register := func(i int) error {
				body := fmt.Sprintf(`{"ID":"web-%d","Name":"web","Port":80}`, i%100)
				req, _ := http.NewRequest("PUT", url, strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			}
			waittest.For(b, tlsWait, "the client to reach the server", func() error { return register(0) })
			b.ResetTimer()
			for i := range b.N {
				// Each registration changes the instance (its port), so
				// every one is a write through Raft.
				body := fmt.Sprintf(`{"ID":"web-%d","Name":"web","Port":%d}`, i%100, 1000+i)
				req, _ := http.NewRequest("PUT", url, strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// TestHTTPS serves the API over TLS on ports.https beside plain HTTP: a
// client trusting the CA is answered, one that does not is refused by
// the handshake.
func TestHTTPS(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfg := agenttest.Config(t)
	cfg.Ports.HTTPS = 0
	cfg.TLS.HTTPS = ca.Config(t, true, "dc1")
	cfg.TLS.HTTPS.VerifyIncoming = false // browsers and curl bring no certificate
	a := agenttest.Start(t, cfg)
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	url := "https://" + a.HTTPSAddr().String() + "/v1/status/leader"
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "server.dc1.cluster"}}}
	resp, err := trusting.Get(url)
	if err != nil {
		t.Fatalf("GET over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET over HTTPS: got %d, want 200", resp.StatusCode)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("a client that does not trust the CA got an answer")
	}
}

// TestEncryptedDNS serves DNS over TLS on ports.dns_tls with tls.dns's
// certificate and DNS over HTTPS on the HTTPS port, both answering as UDP
// does.
func TestEncryptedDNS(t *testing.T) {
	t.Parallel()
	ca := tlsutiltest.NewCA(t)
	cfg := agenttest.Config(t)
	cfg.Ports.HTTPS, cfg.Ports.DNSTLS = 0, 0
	cfg.TLS.HTTPS = ca.Config(t, true, "dc1")
	cfg.TLS.HTTPS.VerifyIncoming = false
	cfg.TLS.DNS = cfg.TLS.HTTPS
	a := agenttest.Start(t, cfg)
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	clientTLS := &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}

	q := new(dns.Msg)
	q.SetQuestion("test.node.cluster.", dns.TypeA)
	udp, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(q, a.DNSAddr().String())
	if err != nil || len(udp.Answer) != 1 {
		t.Fatalf("UDP: got %v, %v; want one A record", udp, err)
	}
	dot, _, err := (&dns.Client{Net: "tcp-tls", TLSConfig: clientTLS, Timeout: 5 * time.Second}).Exchange(q, a.DNSTLSAddr().String())
	if err != nil || len(dot.Answer) != 1 || dot.Answer[0].String() != udp.Answer[0].String() {
		t.Fatalf("DNS over TLS: got %v, %v; want %v", dot, err, udp.Answer)
	}

	wire, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
	resp, err := c.Post("https://"+a.HTTPSAddr().String()+"/dns-query", "application/dns-message", bytes.NewReader(wire))
	if err != nil {
		t.Fatalf("DNS over HTTPS: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DNS over HTTPS: got %d, %v", resp.StatusCode, err)
	}
	doh := new(dns.Msg)
	if err := doh.Unpack(body); err != nil || len(doh.Answer) != 1 || doh.Answer[0].String() != udp.Answer[0].String() {
		t.Fatalf("DNS over HTTPS: got %v, %v; want %v", doh, err, udp.Answer)
	}
}

// TestDNSOverTLSNeedsACertificate: ports.dns_tls without a certificate
// is refused, naming the field.
func TestDNSOverTLSNeedsACertificate(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Ports.DNSTLS = 0
	_, err := agent.New(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "ports.dns_tls") {
		t.Fatalf("got %v, want an error naming ports.dns_tls", err)
	}
}
