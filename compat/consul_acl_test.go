package compat_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	consul "github.com/hashicorp/consul/api"
)

// TestConsulClientACL drives cairn's ACLs with Consul's client, unchanged:
// bootstrap, a policy, a token holding it, the token used for what it
// allows and refused for the rest, self lookup, list without secrets,
// delete.
func TestConsulClientACL(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	a := agenttest.Start(t, cfg)
	anon, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}

	boot, _, err := anon.ACL().Bootstrap()
	if err != nil {
		t.Fatalf("ACL.Bootstrap: %v", err)
	}
	if boot.SecretID == "" || boot.AccessorID == "" || len(boot.Policies) != 1 || boot.Policies[0].Name != "global-management" {
		t.Fatalf("bootstrap token: got %+v, want a secret and the global-management policy", boot)
	}
	if _, _, err := anon.ACL().Bootstrap(); err == nil {
		t.Fatal("a second bootstrap was allowed")
	}
	mgmt, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String(), Token: boot.SecretID})
	if err != nil {
		t.Fatal(err)
	}

	pol, _, err := mgmt.ACL().PolicyCreate(&consul.ACLPolicy{Name: "web-writer", Rules: `service "web" { policy = "write" }`}, nil)
	if err != nil {
		t.Fatalf("ACL.PolicyCreate: %v", err)
	}
	if _, _, err := mgmt.ACL().PolicyCreate(&consul.ACLPolicy{Name: "broken", Rules: `service "web" { policy = "writ" }`}, nil); err == nil {
		t.Fatal("a policy with bad rules was created")
	}
	tok, _, err := mgmt.ACL().TokenCreate(&consul.ACLToken{Description: "web", Policies: []*consul.ACLTokenPolicyLink{{Name: "web-writer"}}}, nil)
	if err != nil {
		t.Fatalf("ACL.TokenCreate: %v", err)
	}
	if tok.SecretID == "" || len(tok.Policies) != 1 || tok.Policies[0].ID != pol.ID {
		t.Fatalf("token create: got %+v, want a secret and policy %s", tok, pol.ID)
	}

	web, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String(), Token: tok.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	if err := web.Agent().ServiceRegister(&consul.AgentServiceRegistration{Name: "web", Port: 80}); err != nil {
		t.Fatalf("register web with its token: %v", err)
	}
	err = web.Agent().ServiceRegister(&consul.AgentServiceRegistration{Name: "db", Port: 5432})
	var se consul.StatusError
	if !errors.As(err, &se) || se.Code != 403 {
		t.Fatalf("register db with the web token: got %v, want a 403", err)
	}
	if err := anon.Agent().ServiceRegister(&consul.AgentServiceRegistration{Name: "web", Port: 81}); err == nil {
		t.Fatal("an anonymous registration was allowed")
	}

	self, _, err := web.ACL().TokenReadSelf(nil)
	if err != nil || self.AccessorID != tok.AccessorID {
		t.Fatalf("TokenReadSelf: got %+v, %v; want accessor %s", self, err, tok.AccessorID)
	}
	list, _, err := mgmt.ACL().TokenList(nil)
	if err != nil {
		t.Fatalf("TokenList: %v", err)
	}
	found := false
	for _, e := range list {
		if e.SecretID != "" {
			t.Errorf("token list shows the secret of %s", e.AccessorID)
		}
		found = found || e.AccessorID == tok.AccessorID
	}
	if !found {
		t.Errorf("token list lacks %s", tok.AccessorID)
	}
	policies, _, err := mgmt.ACL().PolicyList(nil)
	if err != nil || !hasPolicy(policies, "web-writer") {
		t.Fatalf("PolicyList: got %v, %v; want web-writer in it", policies, err)
	}

	if _, err := mgmt.ACL().TokenDelete(tok.AccessorID, nil); err != nil {
		t.Fatalf("TokenDelete: %v", err)
	}
	_, _, err = web.ACL().TokenReadSelf(nil)
	if err == nil || !strings.Contains(err.Error(), "ACL not found") {
		t.Fatalf("deleted token: got %v, want ACL not found", err)
	}
}

func hasPolicy(ps []*consul.ACLPolicyListEntry, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}
