package consensus_test

import (
	"context"
	"testing"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// TestLeaderMakesTheInitialManagementTokenTheBootstrap: the leader's
// reconcile creates the initial management token and marks ACLs
// bootstrapped in that write; a reconcile after it writes nothing (each
// ACL write restarts every agent's change feed).
func TestLeaderMakesTheInitialManagementTokenTheBootstrap(t *testing.T) {
	const secret = "0b6f3a2e-5c1d-4e8f-9a7b-6c5d4e3f2a1b"
	s := startSingleServerWith(t, "srv1", func(c *consensus.Config) { c.InitialManagement = secret })
	pool := gossiptest.Start(t, gossiptest.LANConfig("srv1", "dc1", gossip.RoleServer))
	cfg := testLeaderConfig()
	cfg.ACLEnabled = true
	l := newLeader(t, cfg, s, pool)
	ctx := context.Background()
	if err := l.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	store := s.Store()
	_, tok, err := store.ACLToken(nil, acl.HashSecret(secret), true)
	if err != nil || tok == nil {
		t.Fatalf("initial management token: got %v, %v", tok, err)
	}
	idx, ok := store.ACLBootstrapped()
	if !ok || idx != tok.CreateIndex {
		t.Fatalf("ACLBootstrapped = %d, %v; want the token's index %d", idx, ok, tok.CreateIndex)
	}
	before := store.ACLIndex()
	if err := l.Reconcile(ctx); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
	if after := store.ACLIndex(); after != before {
		t.Errorf("a second reconcile moved the ACL index from %d to %d", before, after)
	}
}
