package compat_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/cairndns/cairn/agent/agenttest"
	consul "github.com/hashicorp/consul/api"
)

const rolesMgmtSecret = "2b7c43e8-3f6a-4c55-9a53-6b1f7e0d9c21"

// startACLAgent starts a one-server datacenter with ACLs on (deny by
// default) and returns Consul clients for its management token and for
// no token. readable sets acl.tokens_secret_readable.
func startACLAgent(t *testing.T, readable bool) (mgmt, anon *consul.Client, addr string) {
	t.Helper()
	cfg := agenttest.Config(t)
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	cfg.ACL.Tokens.InitialManagement = rolesMgmtSecret
	cfg.ACL.Tokens.Agent = rolesMgmtSecret
	cfg.ACL.TokensSecretReadable = readable
	a := agenttest.Start(t, cfg)
	addr = a.HTTPAddr().String()
	return aclClient(t, addr, rolesMgmtSecret), aclClient(t, addr, ""), addr
}

func aclClient(t *testing.T, addr, token string) *consul.Client {
	t.Helper()
	c, err := consul.NewClient(&consul.Config{Address: addr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func is403(err error) bool {
	var se consul.StatusError
	return errors.As(err, &se) && se.Code == 403
}

// TestConsulClientACLRolesAndIdentities drives, with Consul's client:
// the built-in global-read-only policy; roles (create, read by ID and
// name, list, update, delete) and a token authorized through its role;
// service and node identities granting Consul's synthetic policies; token
// clone; token list filters; the empty auth method list; and the
// replication status of a datacenter that is its own primary.
func TestConsulClientACLRolesAndIdentities(t *testing.T) {
	t.Parallel()
	mgmt, _, addr := startACLAgent(t, false)
	acl := mgmt.ACL()

	// The built-in read-only policy, beside global-management.
	ro, _, err := acl.PolicyRead("00000000-0000-0000-0000-000000000002", nil)
	if err != nil || ro.Name != "global-read-only" {
		t.Fatalf("PolicyRead(global-read-only): got %+v, %v", ro, err)
	}
	roTok, _, err := acl.TokenCreate(&consul.ACLToken{Policies: []*consul.ACLTokenPolicyLink{{Name: "global-read-only"}}}, nil)
	if err != nil {
		t.Fatalf("TokenCreate(read-only): %v", err)
	}
	roc := aclClient(t, addr, roTok.SecretID)
	if _, _, err := roc.Catalog().Services(nil); err != nil {
		t.Errorf("read-only token reading the catalog: %v", err)
	}
	if _, _, err := roc.ACL().PolicyList(nil); err != nil {
		t.Errorf("read-only token listing policies: %v", err)
	}
	if _, err := roc.KV().Put(&consul.KVPair{Key: "k", Value: []byte("v")}, nil); !is403(err) {
		t.Errorf("read-only token writing a key: got %v, want a 403", err)
	}

	// Roles.
	pol, _, err := acl.PolicyCreate(&consul.ACLPolicy{Name: "kv-app", Rules: `key_prefix "app/" { policy = "write" }`, Datacenters: []string{"dc1"}}, nil)
	if err != nil {
		t.Fatalf("PolicyCreate: %v", err)
	}
	if !slices.Equal(pol.Datacenters, []string{"dc1"}) {
		t.Errorf("policy Datacenters: got %v, want [dc1] kept", pol.Datacenters)
	}
	role, _, err := acl.RoleCreate(&consul.ACLRole{Name: "app", Description: "the app", Policies: []*consul.ACLRolePolicyLink{{Name: "kv-app"}}}, nil)
	if err != nil {
		t.Fatalf("RoleCreate: %v", err)
	}
	if role.ID == "" || len(role.Policies) != 1 || role.Policies[0].ID != pol.ID || role.Policies[0].Name != "kv-app" {
		t.Fatalf("RoleCreate: got %+v, want an ID and policy kv-app", role)
	}
	if r, _, err := acl.RoleRead(role.ID, nil); err != nil || r.Name != "app" {
		t.Errorf("RoleRead: got %+v, %v", r, err)
	}
	if r, _, err := acl.RoleReadByName("app", nil); err != nil || r.ID != role.ID {
		t.Errorf("RoleReadByName: got %+v, %v", r, err)
	}
	if roles, _, err := acl.RoleList(nil); err != nil || len(roles) != 1 {
		t.Errorf("RoleList: got %d roles, %v; want 1", len(roles), err)
	}
	appTok, _, err := acl.TokenCreate(&consul.ACLToken{Description: "app", Roles: []*consul.ACLTokenRoleLink{{Name: "app"}}}, nil)
	if err != nil {
		t.Fatalf("TokenCreate with a role: %v", err)
	}
	if len(appTok.Roles) != 1 || appTok.Roles[0].ID != role.ID || appTok.Roles[0].Name != "app" {
		t.Errorf("token roles: got %+v, want role app", appTok.Roles)
	}
	app := aclClient(t, addr, appTok.SecretID)
	if _, err := app.KV().Put(&consul.KVPair{Key: "app/x", Value: []byte("1")}, nil); err != nil {
		t.Errorf("role token writing app/x: %v", err)
	}
	if _, err := app.KV().Put(&consul.KVPair{Key: "other", Value: []byte("1")}, nil); !is403(err) {
		t.Errorf("role token writing other: got %v, want a 403", err)
	}
	role.Description = "changed"
	role.Policies = nil
	if _, _, err := acl.RoleUpdate(role, nil); err != nil {
		t.Fatalf("RoleUpdate: %v", err)
	}
	if _, err := app.KV().Put(&consul.KVPair{Key: "app/x", Value: []byte("2")}, nil); !is403(err) {
		t.Errorf("role token after its role lost the policy: got %v, want a 403", err)
	}

	// Identities.
	svcTok, _, err := acl.TokenCreate(&consul.ACLToken{Description: "web", ServiceIdentities: []*consul.ACLServiceIdentity{{ServiceName: "web"}}}, nil)
	if err != nil {
		t.Fatalf("TokenCreate with a service identity: %v", err)
	}
	if len(svcTok.ServiceIdentities) != 1 || svcTok.ServiceIdentities[0].ServiceName != "web" {
		t.Errorf("token service identities: got %+v, want web", svcTok.ServiceIdentities)
	}
	web := aclClient(t, addr, svcTok.SecretID)
	if err := web.Agent().ServiceRegister(&consul.AgentServiceRegistration{Name: "web", Port: 80}); err != nil {
		t.Errorf("service identity web registering web: %v", err)
	}
	if err := web.Agent().ServiceRegister(&consul.AgentServiceRegistration{Name: "db", Port: 5432}); !is403(err) {
		t.Errorf("service identity web registering db: got %v, want a 403", err)
	}
	if _, _, err := web.Catalog().Nodes(nil); err != nil {
		t.Errorf("service identity reading nodes: %v", err)
	}
	nodeTok, _, err := acl.TokenCreate(&consul.ACLToken{NodeIdentities: []*consul.ACLNodeIdentity{{NodeName: "ext1", Datacenter: "dc1"}}}, nil)
	if err != nil {
		t.Fatalf("TokenCreate with a node identity: %v", err)
	}
	node := aclClient(t, addr, nodeTok.SecretID)
	if _, err := node.Catalog().Register(&consul.CatalogRegistration{Node: "ext1", Address: "10.0.0.1"}, nil); err != nil {
		t.Errorf("node identity ext1 registering ext1: %v", err)
	}
	if _, err := node.Catalog().Register(&consul.CatalogRegistration{Node: "ext2", Address: "10.0.0.2"}, nil); !is403(err) {
		t.Errorf("node identity ext1 registering ext2: got %v, want a 403", err)
	}

	// Clone.
	clone, _, err := acl.TokenClone(svcTok.AccessorID, "web clone", nil)
	if err != nil {
		t.Fatalf("TokenClone: %v", err)
	}
	if clone.AccessorID == svcTok.AccessorID || clone.SecretID == "" || clone.SecretID == svcTok.SecretID || clone.Description != "web clone" ||
		len(clone.ServiceIdentities) != 1 || clone.ServiceIdentities[0].ServiceName != "web" {
		t.Errorf("TokenClone: got %+v, want a new token with web's identity", clone)
	}

	// List filters.
	descriptions := func(opts consul.ACLTokenFilterOptions) []string {
		t.Helper()
		list, _, err := acl.TokenListFiltered(opts, nil)
		if err != nil {
			t.Fatalf("TokenListFiltered(%+v): %v", opts, err)
		}
		var out []string
		for _, e := range list {
			out = append(out, e.Description)
		}
		slices.Sort(out)
		return out
	}
	if got := descriptions(consul.ACLTokenFilterOptions{ServiceName: "web"}); !slices.Equal(got, []string{"web", "web clone"}) {
		t.Errorf("tokens for service web: got %q", got)
	}
	if got := descriptions(consul.ACLTokenFilterOptions{Role: role.ID}); !slices.Equal(got, []string{"app"}) {
		t.Errorf("tokens of role app: got %q", got)
	}
	if got := descriptions(consul.ACLTokenFilterOptions{Policy: "00000000-0000-0000-0000-000000000002"}); len(got) != 1 {
		t.Errorf("tokens of global-read-only: got %q, want one", got)
	}
	if got := descriptions(consul.ACLTokenFilterOptions{AuthMethod: "k8s"}); len(got) != 0 {
		t.Errorf("tokens of an auth method: got %q, want none", got)
	}
	if _, _, err := acl.TokenListFiltered(consul.ACLTokenFilterOptions{ServiceName: "web", Role: role.ID}, nil); err == nil {
		t.Error("a token list with two filters was answered")
	}

	// Auth methods: none; replication: off in a datacenter of its own.
	if methods, _, err := acl.AuthMethodList(nil); err != nil || len(methods) != 0 {
		t.Errorf("AuthMethodList: got %v, %v; want an empty list", methods, err)
	}
	repl, _, err := acl.Replication(nil)
	if err != nil || repl.Enabled || repl.Running {
		t.Errorf("Replication: got %+v, %v; want neither enabled nor running", repl, err)
	}

	if _, err := acl.RoleDelete(role.ID, nil); err != nil {
		t.Fatalf("RoleDelete: %v", err)
	}
	if r, _, err := acl.RoleRead(role.ID, nil); r != nil {
		t.Errorf("RoleRead after delete: got %+v, %v; want none", r, err)
	}
}

// TestConsulClientACLSecretReadable: with acl.tokens_secret_readable a
// management token reads a token's SecretID back (read and list), as in
// Consul, and an acl:read one does not; without it (the default) nobody
// does: the servers keep only a hash.
func TestConsulClientACLSecretReadable(t *testing.T) {
	t.Parallel()
	for _, readable := range []bool{true, false} {
		mgmt, _, addr := startACLAgent(t, readable)
		acl := mgmt.ACL()
		// The same policy twice is linked once, as Consul links it.
		twice := []*consul.ACLTokenPolicyLink{{Name: "global-read-only"}, {ID: "00000000-0000-0000-0000-000000000002"}}
		tok, _, err := acl.TokenCreate(&consul.ACLToken{Description: "x", Policies: twice}, nil)
		if err != nil {
			t.Fatalf("TokenCreate: %v", err)
		}
		if len(tok.Policies) != 1 {
			t.Errorf("a policy linked twice: got links %+v, want one", tok.Policies)
		}
		want := ""
		if readable {
			want = tok.SecretID
		}
		read, qm, err := acl.TokenRead(tok.AccessorID, nil)
		if err != nil || read.SecretID != want || !qm.KnownLeader {
			t.Fatalf("readable %v: TokenRead SecretID: got %q, %v (known leader %v); want %q", readable, read.SecretID, err, qm.KnownLeader, want)
		}
		read.Description = "y"
		if upd, _, err := acl.TokenUpdate(read, nil); err != nil || upd.SecretID != want {
			t.Errorf("readable %v: TokenUpdate SecretID: got %+v, %v; want %q", readable, upd, err, want)
		}
		list, _, err := acl.TokenList(nil)
		if err != nil {
			t.Fatalf("TokenList: %v", err)
		}
		for _, e := range list {
			if e.AccessorID == tok.AccessorID && e.SecretID != want {
				t.Errorf("readable %v: TokenList SecretID: got %q, want %q", readable, e.SecretID, want)
			}
		}
		roTok, _, err := acl.TokenCreate(&consul.ACLToken{Policies: []*consul.ACLTokenPolicyLink{{Name: "global-read-only"}}}, nil)
		if err != nil {
			t.Fatalf("TokenCreate(read-only): %v", err)
		}
		read, _, err = aclClient(t, addr, roTok.SecretID).ACL().TokenRead(tok.AccessorID, nil)
		if err != nil || read.SecretID != "" {
			t.Errorf("readable %v: an acl:read token read SecretID %q, %v; want none", readable, read.SecretID, err)
		}
	}
}
