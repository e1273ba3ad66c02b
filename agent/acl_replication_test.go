package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// replWait is how long a change in dc1 may take to be honoured in dc2
// ("within seconds", with room for a loaded machine).
const replWait = 30 * time.Second

// startSecuredDCs starts dc1 (the primary) and dc2, one server each, with
// ACLs on and deny by default; dc2 replicates with replicationToken and
// is configured further by dc2cfg. It waits until both see each other in
// the WAN pool.
func startSecuredDCs(t *testing.T, replicationToken string, dc2cfg func(*config.Config)) (dc1, dc2 *agenttest.Cluster) {
	t.Helper()
	cfgs1 := agenttest.DatacenterConfigs(t, "dc1", 1)
	cfgs2 := agenttest.DatacenterConfigs(t, "dc2", 1)
	for _, c := range []*config.Config{&cfgs1[0], &cfgs2[0]} {
		c.ACL.Enabled = true
		c.ACL.DefaultPolicy = "deny"
		c.ACL.Tokens.InitialManagement = mgmtSecret // the primary's; dc2's servers ignore it
		c.ACL.Tokens.Agent = mgmtSecret
		c.ACL.PrimaryDatacenter = "dc1"
	}
	cfgs2[0].ACL.Tokens.Replication = replicationToken
	if dc2cfg != nil {
		dc2cfg(&cfgs2[0])
	}
	cfgs1[0].JoinWAN = []string{agenttest.WANAddr(cfgs2[0])}
	cfgs2[0].JoinWAN = []string{agenttest.WANAddr(cfgs1[0])}
	dc1 = agenttest.StartConfigs(t, cfgs1)
	dc2 = agenttest.StartConfigs(t, cfgs2)
	// Asked of dc1: dc2 knows the management token only once it
	// replicates.
	waittest.For(t, replWait, "both servers alive in the WAN pool", func() error {
		var members []struct{ Name string }
		mustCall(t, dc1.Agents[0], mgmtSecret, "GET", "/v1/agent/members?wan=1", nil, &members)
		if len(members) != 2 {
			return fmt.Errorf("dc1 sees %v", members)
		}
		return nil
	})
	return dc1, dc2
}

// replicationStatus reads a's /v1/acl/replication.
func replicationStatus(t *testing.T, a *agent.Agent) rpc.ACLReplicationStatus {
	t.Helper()
	var st rpc.ACLReplicationStatus
	code, b := call(t, a, "", "GET", "/v1/acl/replication", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/acl/replication: %d %s", code, b)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return st
}

// makeKVToken creates, through a, a policy writing keys under prefix and a
// token holding it (local when local), and returns the token's secret and
// accessor. Made through a secondary, the policy is made in the primary,
// and is in the secondary's copy once its write returns.
func makeKVToken(t *testing.T, a *agent.Agent, name, prefix string, local bool) (secret, accessor string) {
	t.Helper()
	var pol struct{ ID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{"Name": name, "Rules": fmt.Sprintf(`key_prefix %q { policy = "write" }`, prefix)}, &pol)
	var tok struct{ AccessorID, SecretID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{"Description": name, "Local": local, "Policies": []map[string]string{{"ID": pol.ID}}}, &tok)
	return tok.SecretID, tok.AccessorID
}

// kvPut writes key on a with token and returns the status.
func kvPut(t *testing.T, a *agent.Agent, token, key string) (int, string) {
	t.Helper()
	code, b := call(t, a, token, "PUT", "/v1/kv/"+key, "v")
	return code, string(b)
}

func waitKVPut(t *testing.T, a *agent.Agent, token, key string, want int) {
	t.Helper()
	waittest.For(t, replWait, fmt.Sprintf("PUT %s answers %d", key, want), func() error {
		if code, b := kvPut(t, a, token, key); code != want {
			return fmt.Errorf("got %d %s", code, b)
		}
		return nil
	})
}

func tokenAccessors(t *testing.T, a *agent.Agent) []string {
	t.Helper()
	var toks []struct{ AccessorID string }
	mustCall(t, a, mgmtSecret, "GET", "/v1/acl/tokens", nil, &toks)
	var out []string
	for _, tk := range toks {
		out = append(out, tk.AccessorID)
	}
	return out
}

// TestACLReplicationAcrossDatacenters: with primary_datacenter dc1, a
// policy and token made in dc1 authorize in dc2 within seconds; a global
// token or policy made through dc2 is made in dc1; a local token made in
// dc2 stays there; a token deleted in dc1 stops working in dc2; and once
// dc1's servers are stopped, dc1's tokens keep working in dc2
// (down_policy extend-cache, the default).
func TestACLReplicationAcrossDatacenters(t *testing.T) {
	t.Parallel()
	c1, c2 := startSecuredDCs(t, mgmtSecret, nil)
	dc1, dc2 := c1.Agents[0], c2.Agents[0]

	waittest.For(t, replWait, "dc2 replicating", func() error {
		st := replicationStatus(t, dc2)
		if !st.Enabled || !st.Running || st.SourceDatacenter != "dc1" || st.ReplicationType != "tokens" || st.ReplicatedIndex == 0 {
			return fmt.Errorf("dc2 replication: %+v", st)
		}
		return nil
	})
	if st := replicationStatus(t, dc1); st.Enabled {
		t.Errorf("dc1 (the primary) replication: got %+v, want not enabled", st)
	}

	secret, accessor := makeKVToken(t, dc1, "rep", "rep/", false)
	waitKVPut(t, dc2, secret, "rep/x", http.StatusOK)
	if code, b := kvPut(t, dc2, secret, "other/x"); code != http.StatusForbidden {
		t.Errorf("dc1's token writing other/x in dc2: got %d %s, want 403", code, b)
	}

	// A global token made through dc2 is made in the primary; a local
	// one stays in dc2 and works there.
	viaSecret, viaDC2 := makeKVToken(t, dc2, "via-dc2", "via/", false)
	if !slices.Contains(tokenAccessors(t, dc1), viaDC2) {
		t.Errorf("global token made through dc2: not in dc1")
	}
	if code, b := kvPut(t, dc2, viaSecret, "via/x"); code != http.StatusOK {
		t.Errorf("global token made through dc2, used there at once: got %d %s, want 200", code, b)
	}
	localSecret, localAccessor := makeKVToken(t, dc2, "local-dc2", "local/", true)
	if slices.Contains(tokenAccessors(t, dc1), localAccessor) {
		t.Errorf("local token made in dc2 is in dc1")
	}
	if code, b := kvPut(t, dc2, localSecret, "local/x"); code != http.StatusOK {
		t.Errorf("local token made in dc2: got %d %s, want 200", code, b)
	}
	mustCall(t, dc2, mgmtSecret, "DELETE", "/v1/acl/token/"+viaDC2, nil, nil)
	if code, b := kvPut(t, dc2, viaSecret, "via/y"); code != http.StatusForbidden {
		t.Errorf("global token deleted through dc2, used there at once: got %d %s, want 403", code, b)
	}

	// A token deleted in dc1 stops working in dc2.
	mustCall(t, dc1, mgmtSecret, "DELETE", "/v1/acl/token/"+accessor, nil, nil)
	waitKVPut(t, dc2, secret, "rep/y", http.StatusForbidden)

	// dc1 down: its tokens keep working in dc2.
	secret2, _ := makeKVToken(t, dc1, "rep2", "rep2/", false)
	waitKVPut(t, dc2, secret2, "rep2/x", http.StatusOK)
	agenttest.Stop(t, dc1)
	waittest.For(t, replWait, "dc2's replication to fail", func() error {
		if st := replicationStatus(t, dc2); !st.LastError.After(st.LastSuccess) {
			return fmt.Errorf("dc2 replication: %+v", st)
		}
		return nil
	})
	for i := range 3 {
		if code, b := kvPut(t, dc2, secret2, fmt.Sprintf("rep2/down%d", i)); code != http.StatusOK {
			t.Fatalf("dc1's token in dc2 with dc1 down: got %d %s, want 200", code, b)
		}
		if code, b := kvPut(t, dc2, localSecret, fmt.Sprintf("local/down%d", i)); code != http.StatusOK {
			t.Fatalf("dc2's local token with dc1 down: got %d %s, want 200", code, b)
		}
		time.Sleep(200 * time.Millisecond) // spread over a few replication retries
	}
}

// TestACLDownPolicyDeny: with acl.down_policy deny, once dc2's replication
// from the stopped dc1 has failed for longer than acl.token_ttl, dc1's
// tokens are refused in dc2; dc2's local tokens keep working.
func TestACLDownPolicyDeny(t *testing.T) {
	t.Parallel()
	c1, c2 := startSecuredDCs(t, mgmtSecret, func(c *config.Config) {
		c.ACL.DownPolicy = "deny"
		c.ACL.TokenTTL = time.Second
	})
	dc1, dc2 := c1.Agents[0], c2.Agents[0]
	secret, _ := makeKVToken(t, dc1, "rep", "rep/", false)
	waitKVPut(t, dc2, secret, "rep/x", http.StatusOK)
	localSecret, _ := makeKVToken(t, dc2, "local-dc2", "local/", true)
	waitKVPut(t, dc2, localSecret, "local/x", http.StatusOK)

	agenttest.Stop(t, dc1)
	waitKVPut(t, dc2, secret, "rep/y", http.StatusForbidden)
	if code, b := kvPut(t, dc2, localSecret, "local/y"); code != http.StatusOK {
		t.Errorf("dc2's local token with dc1 down: got %d %s, want 200", code, b)
	}
}

// TestACLReplicationNeedsThePrimarysToken: replication is the primary's
// to grant. A secondary whose replication token the primary does not know
// replicates nothing (its status says why), so dc1's tokens mean nothing
// in it; and the primary answers its ACL data to no caller without a
// token that may write ACLs there, nor does a secondary take a global
// token write from a caller without one.
func TestACLReplicationNeedsThePrimarysToken(t *testing.T) {
	t.Parallel()
	const bogus = "0b9a6f43-5d2e-4c8e-9f1a-7e3d2c1b0a99"
	c1, c2 := startSecuredDCs(t, bogus, nil)
	dc1, dc2 := c1.Agents[0], c2.Agents[0]
	waittest.For(t, replWait, "dc2's replication to be refused", func() error {
		st := replicationStatus(t, dc2)
		if !strings.Contains(st.LastErrorMessage, "ACL not found") || st.ReplicatedIndex != 0 {
			return fmt.Errorf("dc2 replication: %+v", st)
		}
		return nil
	})
	secret, _ := makeKVToken(t, dc1, "rep", "rep/", false)
	if code, b := kvPut(t, dc2, secret, "rep/x"); code != http.StatusForbidden {
		t.Errorf("dc1's token in dc2 without replication: got %d %s, want 403", code, b)
	}

	// The primary's ACL data, asked for by an attacker: refused without
	// acl:write, whatever the token.
	pool := rpctest.NewPool(t)
	readOnly, _ := makeKVToken(t, dc1, "kv-only", "kv/", false)
	for _, token := range []string{"", "anonymous", bogus, readOnly} {
		var reply rpc.ACLReplicaResponse
		err := callAs(pool, c1.RPCAddr(0), rpc.MethodACLReplica, &rpc.ACLReplicaRequest{QueryOptions: rpc.QueryOptions{Token: token}}, &reply)
		if !errors.Is(err, rpc.ErrPermissionDenied) && !errors.Is(err, rpc.ErrACLNotFound) {
			t.Errorf("ACL.Replica with token %q: got %v, want refused", token, err)
		}
		if len(reply.Replica.Tokens) != 0 || len(reply.Replica.Policies) != 0 {
			t.Errorf("ACL.Replica with token %q: answered %d tokens, %d policies", token, len(reply.Replica.Tokens), len(reply.Replica.Policies))
		}
	}
	// A global token made through dc2 without a token: refused, in
	// neither datacenter.
	before := tokenAccessors(t, dc1)
	var reply rpc.ACLTokenResponse
	err := callAs(pool, c2.RPCAddr(0), rpc.MethodACLTokenSet, &rpc.ACLTokenSetRequest{Spec: rpc.ACLTokenSpec{Description: "evil"}}, &reply)
	if err == nil {
		t.Errorf("ACL.TokenSet in dc2 without a token: made %+v", reply.Token)
	}
	if after := tokenAccessors(t, dc1); !slices.Equal(before, after) {
		t.Errorf("dc1's tokens changed: before %v, after %v", before, after)
	}
}

// callAs makes one RPC to the server at addr.
func callAs(pool *rpc.Pool, addr, method string, args, reply any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pool.Call(ctx, addr, method, args, reply)
}
