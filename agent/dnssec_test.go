package agent_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/resolver"
)

const dnssecWait = 20 * time.Second

// askSigned asks a for qname's qtype with the DO bit.
func askSigned(a *agent.Agent, qname string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(qname, qtype)
	m.SetEdns0(1232, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, a.DNSAddr().String())
	return r, err
}

// signedAnswer returns a's DNSKEY, once a's answer to qname's qtype is
// signed by that key.
func signedAnswer(a *agent.Agent, qname string, qtype uint16) (*dns.DNSKEY, error) {
	keys, err := askSigned(a, "cluster.", dns.TypeDNSKEY)
	if err != nil {
		return nil, err
	}
	var key *dns.DNSKEY
	for _, rr := range keys.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			key = k
		}
	}
	if key == nil {
		return nil, errors.New("no DNSKEY at the apex yet")
	}
	r, err := askSigned(a, qname, qtype)
	if err != nil {
		return nil, err
	}
	var set []dns.RR
	var sig *dns.RRSIG
	for _, rr := range r.Answer {
		if s, ok := rr.(*dns.RRSIG); ok {
			sig = s
		} else {
			set = append(set, rr)
		}
	}
	if sig == nil || len(set) == 0 {
		return nil, fmt.Errorf("%s %s is not signed: %v", qname, dns.TypeToString[qtype], r.Answer)
	}
	if err := sig.Verify(key, set); err != nil {
		return nil, fmt.Errorf("%s %s: the signature does not verify with the DNSKEY: %w", qname, dns.TypeToString[qtype], err)
	}
	return key, nil
}

// TestDNSSECAcrossAgents: the leader makes the datacenter's key (auto), a
// client agent fetches it with its agent token and signs its own answers
// with the same key; a client whose token the servers refuse gets no key
// and answers unsigned. Gossip is encrypted, so the key is sealed in Raft.
func TestDNSSECAcrossAgents(t *testing.T) {
	t.Parallel()
	s := aclServerConfig(t, "s1")
	s.Resolver.DNSSEC.Enabled, s.DNSSEC.Auto = true, true
	// Gossip encryption: the servers keep the key sealed with it in Raft
	// and hand it out in the clear.
	s.EncryptKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	server := agenttest.Start(t, s)
	c := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(s))
	c.ACL = s.ACL
	c.ACL.Tokens.InitialManagement = ""
	c.Resolver.DNSSEC.Enabled = true
	c.EncryptKey = s.EncryptKey
	client := agenttest.Start(t, c)
	d := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(s))
	d.ACL.Enabled, d.ACL.DefaultPolicy = true, "deny"
	d.Resolver.DNSSEC.Enabled = true
	d.EncryptKey = s.EncryptKey
	refused := agenttest.Start(t, d)

	var serverKey, clientKey *dns.DNSKEY
	waittest.For(t, dnssecWait, "the server signs", func() (err error) {
		serverKey, err = signedAnswer(server, "cluster.", dns.TypeSOA)
		return err
	})
	waittest.For(t, dnssecWait, "the client signs", func() (err error) {
		clientKey, err = signedAnswer(client, "cluster.", dns.TypeSOA)
		return err
	})
	if serverKey.String() != clientKey.String() {
		t.Fatalf("the client signs with another key:\n%v\n%v", clientKey, serverKey)
	}
	// c2 has joined and asked (it asks at once, then every second or more).
	waittest.For(t, dnssecWait, "c2 answers", func() error {
		r, err := askSigned(refused, "cluster.", dns.TypeSOA)
		if err != nil || len(r.Answer) == 0 {
			return fmt.Errorf("%v, %v", r, err)
		}
		return nil
	})
	if _, err := signedAnswer(refused, "cluster.", dns.TypeSOA); err == nil {
		t.Error("an agent whose token may not write its node signs answers: it got the key")
	}
}

// TestDNSSECKeyFile: a server given a key file signs with that key, whose
// DS is what resolver.DS computes from the file.
func TestDNSSECKeyFile(t *testing.T) {
	t.Parallel()
	key, err := resolver.NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	pem, err := resolver.EncodeSigningKey(key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dnssec.pem")
	if err := os.WriteFile(file, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := agenttest.ServerConfig(t, "s1", 1)
	cfg.Resolver.DNSSEC.Enabled, cfg.DNSSEC.KeyFile = true, file
	a := agenttest.Start(t, cfg)
	var served *dns.DNSKEY
	waittest.For(t, dnssecWait, "the server signs", func() (err error) {
		served, err = signedAnswer(a, "s1.node.dc1.cluster.", dns.TypeA)
		return err
	})
	want, err := resolver.DS("cluster.", key)
	if err != nil {
		t.Fatal(err)
	}
	if got := served.ToDS(dns.SHA256); got.String() != want.String() {
		t.Errorf("the served key's DS is %v, want the file's %v", got, want)
	}
}
