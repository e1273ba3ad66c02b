package agent_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/consensus/consensustest"
)

// securedSnapshotCluster starts three servers with ACLs on, deny by
// default, and a client agent with ACLs on joined to them, and waits for
// the initial management token and for the client to reach the servers.
func securedSnapshotCluster(t *testing.T) (*agenttest.Cluster, *agent.Agent) {
	t.Helper()
	cfgs := agenttest.DatacenterConfigs(t, "dc1", 3)
	for i := range cfgs {
		secure(&cfgs[i])
		cfgs[i].ACL.Tokens.InitialManagement = mgmtSecret
	}
	cl := agenttest.StartConfigs(t, cfgs)
	ccfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(cfgs[0]))
	secure(&ccfg)
	client := agenttest.Start(t, ccfg)
	waitManagement(t, cl.Agents[0])
	waitManagement(t, client)
	return cl, client
}

// secure turns ACLs on in cfg as docs/operating/security.md sets it up: deny by
// default, with the (servers') initial management token as the agent's own.
func secure(cfg *config.Config) {
	cfg.ACL.Enabled = true
	cfg.ACL.DefaultPolicy = "deny"
	cfg.ACL.Tokens.Agent = mgmtSecret
}

// inflated returns how many bytes a server inflated from snapshot archives
// (cairn_snapshot_restore_inflated_bytes_total).
func inflated(t *testing.T, a *agent.Agent) float64 {
	t.Helper()
	code, body := call(t, a, mgmtSecret, "GET", "/v1/agent/metrics?format=prometheus", nil)
	if code != http.StatusOK {
		t.Fatalf("metrics: got %d %s", code, body)
	}
	samples, err := parsePrometheus(string(body))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := samples["cairn_snapshot_restore_inflated_bytes_total"]
	if !ok {
		t.Fatal("metrics lack cairn_snapshot_restore_inflated_bytes_total")
	}
	return v
}

// hasNode tells whether the catalog holds node, as the leader reads it.
func hasNode(t *testing.T, a *agent.Agent, node string) bool {
	t.Helper()
	var nodes []struct{ Node string }
	mustCall(t, a, mgmtSecret, "GET", "/v1/catalog/nodes", nil, &nodes)
	for _, n := range nodes {
		if n.Node == node {
			return true
		}
	}
	return false
}

// putSnapshot sends archive to a's PUT /v1/snapshot with token (none when
// "") from the attacker's address, and returns the status and body.
func putSnapshot(t *testing.T, a *agent.Agent, token string, archive []byte) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(attackerIP)}, Timeout: 5 * time.Second}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest("PUT", "http://"+a.HTTPAddr().String()+"/v1/snapshot", bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Consul-Token", token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("PUT /v1/snapshot: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSnapshotRestoreBombIsRefusedBeforeItIsRead plays callers without a
// management token (none, the anonymous token, one that may write every
// key) sending a 400 KB archive that inflates to 400 MiB of zeros to
// PUT /v1/snapshot of a follower, of the leader and of a client agent of
// a secured cluster. Each is refused with 403 before any server inflated a
// byte of it (a follower inflated it whole first, to 0.9 GB of memory);
// so is a good archive, and the catalog is unchanged. A management
// token's restore then goes through, and is inflated by the leader alone.
func TestSnapshotRestoreBombIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	cl, client := securedSnapshotCluster(t)
	leader := leaderAgent(t, cl)
	var follower *agent.Agent
	for _, a := range cl.Agents {
		if a != leader {
			follower = a
			break
		}
	}
	keyWriter := makeToken(t, leader, "all-keys", `key_prefix "" { policy = "write" }`)
	code, saved := call(t, leader, mgmtSecret, "GET", "/v1/snapshot", nil)
	if code != http.StatusOK {
		t.Fatalf("save: got %d %s", code, saved)
	}
	bomb := consensustest.ArchiveBomb(t, 400<<20)
	big := bytes.Repeat(bomb, 7<<20/len(bomb)) // 7 MB: 7 GiB inflated
	// Written after the save: a restore of the saved archive takes it away.
	mustCall(t, leader, mgmtSecret, "PUT", "/v1/catalog/register", map[string]string{"Node": "marker", "Address": "10.0.0.9"}, nil)

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for _, to := range []struct {
		name string
		a    *agent.Agent
	}{{"follower", follower}, {"leader", leader}, {"client agent", client}} {
		for _, tok := range []struct{ name, secret string }{
			{"no token", ""}, {"the anonymous token", "anonymous"}, {"a key_prefix write token", keyWriter},
		} {
			// 403 either way: "Permission denied", or "ACL not found" from a
			// follower that has not applied the key writer's token yet.
			code, body := putSnapshot(t, to.a, tok.secret, bomb)
			if code != http.StatusForbidden {
				t.Errorf("%d-byte bomb to the %s with %s: got %d %s, want 403", len(bomb), to.name, tok.name, code, body)
			}
			if code, body := putSnapshot(t, to.a, tok.secret, []byte(saved)); code != http.StatusForbidden {
				t.Errorf("a good archive to the %s with %s: got %d %s, want 403", to.name, tok.name, code, body)
			}
		}
	}
	// A body near the cap is refused as quickly: the agent reads none
	// of it, and the caller gets the 403, not a broken connection.
	if code, body := putSnapshot(t, follower, "", big); code != http.StatusForbidden {
		t.Errorf("7 MB upload to the follower with no token: got %d %s, want 403", code, body)
	}
	runtime.ReadMemStats(&m1)
	grew := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("19 refusals (9 of a %d-byte bomb of 400 MiB, 9 of a good archive, one of 7 MB): the process allocated %d KiB; heap %d KiB before, %d KiB after",
		len(bomb), grew>>10, m0.HeapAlloc>>10, m1.HeapAlloc>>10)
	for i, a := range cl.Agents {
		if n := inflated(t, a); n != 0 {
			t.Errorf("server s%d inflated %.0f bytes of refused archives, want none", i+1, n)
		}
	}
	// Other tests allocate beside this one; inflating even one bomb
	// allocates more than this.
	if grew > 256<<20 {
		t.Errorf("the refusals allocated %d MiB, want far less than one inflated bomb (400 MiB)", grew>>20)
	}
	if !hasNode(t, leader, "marker") {
		t.Error("refused restores changed the catalog: the node written after the save is gone")
	}

	// A management token restores, through the client agent; only the
	// leader inflates the archive. (Before it, the refused good archives
	// inflated nothing either.)
	if code, body := putSnapshot(t, client, mgmtSecret, []byte(saved)); code != http.StatusOK {
		t.Fatalf("restore with the management token: got %d %s, want 200", code, body)
	}
	var byServer []bool
	for _, a := range cl.Agents {
		byServer = append(byServer, inflated(t, a) > 0)
	}
	var want []bool
	for _, a := range cl.Agents {
		want = append(want, a == leader)
	}
	if !reflect.DeepEqual(byServer, want) {
		t.Errorf("servers that inflated the restored archive: %v, want only the leader: %v", byServer, want)
	}
	if hasNode(t, leader, "marker") {
		t.Error("after the restore the node written after the save is still there")
	}
}
