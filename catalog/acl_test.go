package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

const (
	policyA = "11111111-1111-1111-1111-111111111111"
	tokenA  = "22222222-2222-2222-2222-222222222222"
	tokenB  = "33333333-3333-3333-3333-333333333333"
)

func hashOf(c byte) string { return strings.Repeat(string(c), 64) }

func TestACLBootstrapOnlyOnce(t *testing.T) {
	s := newStore(t)
	boot := &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: &catalog.ACLToken{AccessorID: tokenA, SecretHash: hashOf('a')}}
	if err := s.ApplyACL(5, boot); err != nil {
		t.Fatalf("first bootstrap: %v", err)
	}
	if idx, ok := s.ACLBootstrapped(); !ok || idx != 5 {
		t.Fatalf("ACLBootstrapped = %d, %v; want 5, true", idx, ok)
	}
	again := &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: &catalog.ACLToken{AccessorID: tokenB, SecretHash: hashOf('b')}}
	if err := s.ApplyACL(6, again); !errors.Is(err, catalog.ErrACLBootstrapped) {
		t.Fatalf("second bootstrap: got %v, want ErrACLBootstrapped", err)
	}
	_, tok, err := s.ACLToken(nil, hashOf('a'), true)
	if err != nil || tok == nil || tok.AccessorID != tokenA {
		t.Fatalf("token by secret: got %+v, %v", tok, err)
	}
	if len(tok.Policies) != 1 || tok.Policies[0].ID != catalog.ManagementPolicyID {
		t.Fatalf("bootstrap token policies = %+v, want the management policy", tok.Policies)
	}
	if _, anon, _ := s.ACLToken(nil, catalog.AnonymousTokenID, false); anon == nil {
		t.Fatal("bootstrap made no anonymous token")
	}
	if _, tok, _ := s.ACLToken(nil, tokenB, false); tok != nil {
		t.Fatal("the refused bootstrap wrote its token")
	}
}

// TestACLInitialManagementIsTheBootstrap: the initial management token's
// creation marks ACLs bootstrapped, as Consul's does, and so does a later
// init finding that token made by a release that did not mark it.
func TestACLInitialManagementIsTheBootstrap(t *testing.T) {
	for _, preexisting := range []bool{false, true} {
		s := newStore(t)
		initial := &catalog.ACLToken{AccessorID: tokenA, SecretHash: hashOf('a'), Policies: []catalog.ACLPolicyLink{{ID: catalog.ManagementPolicyID}}}
		if preexisting {
			if err := s.ApplyACL(3, &catalog.ACLRequest{Op: catalog.ACLInit}); err != nil {
				t.Fatal(err)
			}
			if err := s.ApplyACL(4, &catalog.ACLRequest{Op: catalog.ACLTokenSet, Token: initial}); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.ACLBootstrapped(); ok {
				t.Fatal("a token set marked ACLs bootstrapped")
			}
		}
		if err := s.ApplyACL(5, &catalog.ACLRequest{Op: catalog.ACLInit, Token: initial}); err != nil {
			t.Fatalf("init: %v", err)
		}
		if idx, ok := s.ACLBootstrapped(); !ok || idx != 5 {
			t.Fatalf("preexisting %v: ACLBootstrapped = %d, %v; want 5, true", preexisting, idx, ok)
		}
		boot := &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: &catalog.ACLToken{AccessorID: tokenB, SecretHash: hashOf('b')}}
		err := s.ApplyACL(6, boot)
		if !errors.Is(err, catalog.ErrACLBootstrapped) || !strings.Contains(err.Error(), "(reset index: 5)") {
			t.Fatalf("bootstrap after the initial management token: got %v, want ErrACLBootstrapped naming reset index 5", err)
		}
		// Another init (a new leader) keeps the bootstrap's index.
		if err := s.ApplyACL(7, &catalog.ACLRequest{Op: catalog.ACLInit, Token: initial}); err != nil {
			t.Fatal(err)
		}
		if idx, _ := s.ACLBootstrapped(); idx != 5 {
			t.Fatalf("bootstrap index after a second init: got %d, want 5", idx)
		}
	}
}

// TestACLBootstrapReset: a bootstrap after one is allowed with the
// current reset index only, once; it moves the reset index.
func TestACLBootstrapReset(t *testing.T) {
	s := newStore(t)
	tok := func(c byte, id string) *catalog.ACLToken {
		return &catalog.ACLToken{AccessorID: id, SecretHash: hashOf(c)}
	}
	if err := s.ApplyACL(5, &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: tok('a', tokenA)}); err != nil {
		t.Fatal(err)
	}
	err := s.ApplyACL(6, &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: tok('b', tokenB), ResetIndex: 4})
	if !errors.Is(err, catalog.ErrACLBootstrapped) || !strings.Contains(err.Error(), "specified 4, reset index: 5") {
		t.Fatalf("bootstrap with a wrong reset index: got %v", err)
	}
	if err := s.ApplyACL(7, &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: tok('b', tokenB), ResetIndex: 5}); err != nil {
		t.Fatalf("bootstrap with the reset index: %v", err)
	}
	if idx, _ := s.ACLBootstrapped(); idx != 7 {
		t.Fatalf("reset index after the reset: got %d, want 7", idx)
	}
	if _, got, _ := s.ACLToken(nil, tokenB, false); got == nil || len(got.Policies) != 1 || got.Policies[0].ID != catalog.ManagementPolicyID {
		t.Fatalf("token of the reset bootstrap: got %+v, want a management token", got)
	}
	const tokenC = "44444444-4444-4444-4444-444444444444"
	if err := s.ApplyACL(8, &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: tok('c', tokenC), ResetIndex: 5}); !errors.Is(err, catalog.ErrACLBootstrapped) {
		t.Fatalf("the same reset index twice: got %v, want ErrACLBootstrapped", err)
	}
}

func TestACLTokensLinkOnlyExistingPolicies(t *testing.T) {
	s := newStore(t)
	set := &catalog.ACLRequest{Op: catalog.ACLTokenSet, Token: &catalog.ACLToken{
		AccessorID: tokenA, SecretHash: hashOf('a'), Policies: []catalog.ACLPolicyLink{{ID: policyA}}}}
	var fe *catalog.FieldError
	if err := s.ApplyACL(3, set); !errors.As(err, &fe) || fe.Field != "Policies[0]" {
		t.Fatalf("token with unknown policy: got %v, want a FieldError on Policies[0]", err)
	}
	pol := &catalog.ACLRequest{Op: catalog.ACLPolicySet, Policy: &catalog.ACLPolicy{ID: policyA, Name: "web", Rules: `service "web" { policy = "write" }`}}
	if err := s.ApplyACL(4, pol); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyACL(5, set); err != nil {
		t.Fatalf("token with the policy: %v", err)
	}
	dup := &catalog.ACLRequest{Op: catalog.ACLPolicySet, Policy: &catalog.ACLPolicy{ID: tokenB, Name: "WEB"}}
	if err := s.ApplyACL(6, dup); !errors.As(err, &fe) || fe.Field != "Name" {
		t.Fatalf("policy with a taken name: got %v, want a FieldError on Name", err)
	}
	if err := s.ApplyACL(7, &catalog.ACLRequest{Op: catalog.ACLPolicyDelete, Policy: &catalog.ACLPolicy{ID: catalog.ManagementPolicyID}}); err == nil {
		t.Fatal("deleting the management policy was allowed")
	}
	if got := s.ACLIndex(); got != 5 {
		t.Fatalf("ACLIndex = %d, want 5 (failed writes do not count)", got)
	}
}

func TestACLSurvivesSnapshot(t *testing.T) {
	s := newStore(t)
	boot := &catalog.ACLRequest{Op: catalog.ACLBootstrap, Token: &catalog.ACLToken{AccessorID: tokenA, SecretHash: hashOf('a')}}
	if err := s.ApplyACL(5, boot); err != nil {
		t.Fatal(err)
	}
	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	restored := newStore(t)
	if err := restored.Restore(d); err != nil {
		t.Fatal(err)
	}
	if _, ok := restored.ACLBootstrapped(); !ok {
		t.Fatal("bootstrap not restored")
	}
	_, tok, _ := restored.ACLToken(nil, hashOf('a'), true)
	if tok == nil || tok.AccessorID != tokenA {
		t.Fatalf("token after restore: got %+v", tok)
	}
	if restored.ACLIndex() != 5 {
		t.Fatalf("ACLIndex after restore = %d, want 5", restored.ACLIndex())
	}
}

func TestACLChangeResetsTheFeed(t *testing.T) {
	s := newStore(t)
	mustRegister(t, s, 1, svcReq("n1", "10.0.0.1", "web1", "web"))
	pol := &catalog.ACLRequest{Op: catalog.ACLPolicySet, Policy: &catalog.ACLPolicy{ID: policyA, Name: "p"}}
	if err := s.ApplyACL(2, pol); err != nil {
		t.Fatal(err)
	}
	if c := s.ChangesSince(nil, 1); !c.Reset {
		t.Fatalf("changes across an ACL write = %+v, want Reset", c)
	}
}

// TestReplicateACL: a replica replaces the policies, roles and global
// tokens, keeps local tokens, and leaves rows it does not change at their
// index.
func TestReplicateACL(t *testing.T) {
	s, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	pol := &catalog.ACLPolicy{ID: "11111111-1111-1111-1111-111111111111", Name: "p"}
	old := &catalog.ACLPolicy{ID: "22222222-2222-2222-2222-222222222222", Name: "old"}
	local := &catalog.ACLToken{AccessorID: "33333333-3333-3333-3333-333333333333", SecretHash: strings.Repeat("a", 64), Local: true}
	stale := &catalog.ACLToken{AccessorID: "44444444-4444-4444-4444-444444444444", SecretHash: strings.Repeat("b", 64)}
	for i, req := range []*catalog.ACLRequest{
		{Op: catalog.ACLPolicySet, Policy: old}, {Op: catalog.ACLTokenSet, Token: local}, {Op: catalog.ACLTokenSet, Token: stale},
	} {
		if err := s.ApplyACL(uint64(i+1), req); err != nil {
			t.Fatal(err)
		}
	}
	global := &catalog.ACLToken{AccessorID: "55555555-5555-5555-5555-555555555555", SecretHash: strings.Repeat("c", 64), Policies: []catalog.ACLPolicyLink{{ID: pol.ID}}}
	rep := &catalog.ACLReplica{Policies: []*catalog.ACLPolicy{pol}, Tokens: []*catalog.ACLToken{global}, WithTokens: true}
	if err := s.ApplyACL(10, &catalog.ACLRequest{Op: catalog.ACLReplicate, Replica: rep}); err != nil {
		t.Fatalf("replicate: %v", err)
	}
	_, policies, _ := s.ACLPolicies(nil)
	_, tokens, _ := s.ACLTokens(nil)
	var ids []string
	for _, p := range policies {
		ids = append(ids, p.Name)
	}
	for _, tk := range tokens {
		ids = append(ids, tk.AccessorID[:1])
	}
	if got, want := strings.Join(ids, ","), "p,3,5"; got != want {
		t.Fatalf("after replication: got %s, want %s (policy p, local token 3, global token 5)", got, want)
	}
	if err := s.ApplyACL(11, &catalog.ACLRequest{Op: catalog.ACLReplicate, Replica: rep}); err != nil {
		t.Fatalf("replicate again: %v", err)
	}
	if _, p, _ := s.ACLPolicy(nil, pol.ID, false); p.ModifyIndex != 10 {
		t.Errorf("unchanged policy: ModifyIndex %d, want 10", p.ModifyIndex)
	}
	if _, tk, _ := s.ACLToken(nil, global.AccessorID, false); tk.ModifyIndex != 10 {
		t.Errorf("unchanged token: ModifyIndex %d, want 10", tk.ModifyIndex)
	}
}
