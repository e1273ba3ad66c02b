package consensus_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// dnssecKey asks n's Operator endpoint for the DNSSEC key, as agent node
// would.
func dnssecKey(t *testing.T, p *rpc.Pool, n *consensustest.Node, stale bool) (*rpc.DNSSECKey, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var reply rpc.DNSSECKeyResponse
	args := &rpc.DNSSECKeyRequest{Node: "agent1"}
	args.AllowStale = stale
	err := p.Call(ctx, n.Addr, rpc.MethodOperatorDNSSECKey, args, &reply)
	return reply.Key, err
}

// leadWithAutoKey runs the leader duties of n, a datacenter of one
// server, with DNSSECAuto, until the leader has made the key; it returns
// n's gossip pool and the leader's configuration, for more reconciles.
func leadWithAutoKey(t *testing.T, n *consensustest.Node) (*gossip.Pool, consensus.LeaderConfig) {
	t.Helper()
	pool := serverPool(t, n)
	cfg := testAutopilotConfig(t)
	cfg.DNSSECAuto = true
	runLeader(t, serveOperator(t, cfg, consensus.ACLConfig{}, n, pool))
	consensustest.WaitFor(t, within, func() error {
		if n.Server.DNSSECKey() == nil {
			return errors.New("no key made")
		}
		return nil
	})
	return pool, cfg
}

// TestDNSSECKeyAuto: with auto, the leader makes one key, once; every
// server hands out the same, and a later leader keeps it.
func TestDNSSECKeyAuto(t *testing.T) {
	t.Parallel()
	cfg := testAutopilotConfig(t)
	cfg.DNSSECAuto = true
	c := startAutopilotCluster(t, cfg)
	leader := consensustest.WaitForLeader(t, c.nodes, within)
	consensustest.WaitFor(t, within, func() error {
		for _, n := range c.nodes {
			if n.Server.DNSSECKey() == nil {
				return fmt.Errorf("%s holds no DNSSEC key yet", n.ID)
			}
		}
		return nil
	})
	p := rpctest.NewPool(t)
	first, err := dnssecKey(t, p, leader, false)
	if err != nil || first == nil {
		t.Fatalf("DNSSECKey from the leader: %v, %v", first, err)
	}
	k, err := x509.ParseECPrivateKey(first.PrivateKey)
	if err != nil || k.Curve != elliptic.P256() || first.Algorithm != 13 || !first.Generated {
		t.Fatalf("the stored key: %+v (%v), want a generated P-256 key of algorithm 13", first, err)
	}
	for _, n := range c.nodes {
		got, err := dnssecKey(t, p, n, true)
		if err != nil || got == nil || !bytes.Equal(got.PrivateKey, first.PrivateKey) {
			t.Errorf("%s hands out another key: %v", n.ID, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := newLeader(t, cfg, leader.Server, c.pools[leader]).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if again := leader.Server.DNSSECKey(); again.ModifyIndex != first.ModifyIndex {
		t.Errorf("a second reconcile made another key (ModifyIndex %d, was %d)", again.ModifyIndex, first.ModifyIndex)
	}
}

// TestDNSSECKeyFromFile: a key given to the leader (from its key file)
// replaces the stored one, a generated one included, and is stored once.
func TestDNSSECKeyFromFile(t *testing.T) {
	t.Parallel()
	n := consensustest.StartCluster(t, 1)[0]
	pool, cfg := leadWithAutoKey(t, n)
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DNSSECKey = der
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	l := newLeader(t, cfg, n.Server, pool)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	got := n.Server.DNSSECKey()
	if !bytes.Equal(got.PrivateKey, der) || got.Generated {
		t.Fatalf("after a reconcile with a key file: %+v, want the file's key", got)
	}
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if again := n.Server.DNSSECKey(); again.ModifyIndex != got.ModifyIndex {
		t.Errorf("the same file's key was stored again")
	}

	// A catalog archive holds no key, and restoring one keeps the key.
	var archive bytes.Buffer
	if _, err := n.Server.SaveSnapshot(&archive, "dc1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Server.RestoreSnapshot(ctx, &archive); err != nil {
		t.Fatal(err)
	}
	if after := n.Server.DNSSECKey(); after == nil || !bytes.Equal(after.PrivateKey, der) {
		t.Errorf("after restoring an archive: %+v, want the key kept", after)
	}

	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DNSSECKey, _ = x509.MarshalECPrivateKey(p384)
	if err := cfg.Validate(); err == nil {
		t.Error("a leader configuration with a P-384 DNSSEC key validates")
	}
}

// TestDNSSECKeySealedAtRest: with sealing keys (the gossip keys), Raft
// holds the DNSSEC key sealed, the Operator endpoint hands it out in the
// clear, a new primary gossip key makes the leader seal it again, and a
// server holding none of the keys it is sealed with refuses to hand it
// out rather than hand out garbage.
func TestDNSSECKeySealedAtRest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	secrets := [][]byte{bytes.Repeat([]byte{1}, 32)}
	n := consensustest.StartNodeWith(t, "s1", t.TempDir(), "", func(c *consensus.Config) {
		c.SealKeys = func() [][]byte {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(secrets)
		}
	})
	if err := n.Server.BootstrapCluster([]consensus.Peer{n.Peer()}); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitForLeader(t, []*consensustest.Node{n}, within)
	pool, cfg := leadWithAutoKey(t, n)
	stored := n.Server.DNSSECKey()
	if stored.SealedWith == "" {
		t.Fatal("the key is stored in the clear")
	}
	if _, err := x509.ParseECPrivateKey(stored.PrivateKey); err == nil {
		t.Fatal("the stored key parses as a private key: not sealed")
	}
	p := rpctest.NewPool(t)
	clear, err := dnssecKey(t, p, n, false)
	if err != nil || clear.SealedWith != "" {
		t.Fatalf("DNSSECKey: %+v, %v; want the key in the clear", clear, err)
	}
	if _, err := x509.ParseECPrivateKey(clear.PrivateKey); err != nil {
		t.Fatalf("the key handed out does not parse: %v", err)
	}

	// A new primary gossip key, the old one still installed: sealed anew.
	mu.Lock()
	secrets = [][]byte{bytes.Repeat([]byte{2}, 32), secrets[0]}
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := newLeader(t, cfg, n.Server, pool).Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	resealed := n.Server.DNSSECKey()
	if resealed.SealedWith == stored.SealedWith || resealed.Generated != stored.Generated {
		t.Fatalf("after a new primary key: sealed with %s (was %s), want sealed anew, still generated", resealed.SealedWith, stored.SealedWith)
	}
	mu.Lock()
	secrets = secrets[:1] // the old gossip key removed
	mu.Unlock()
	again, err := dnssecKey(t, p, n, false)
	if err != nil || !bytes.Equal(again.PrivateKey, clear.PrivateKey) {
		t.Fatalf("after the old gossip key is gone: %v; want the same key", err)
	}

	mu.Lock()
	secrets = [][]byte{bytes.Repeat([]byte{3}, 32)} // none it is sealed with
	mu.Unlock()
	if _, err := dnssecKey(t, p, n, false); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("with none of the sealing keys: %v, want a refusal", err)
	}
}
