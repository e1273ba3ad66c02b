package consensus

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// applyAt applies a command to f as Raft would, at log index idx with the
// leader's time stamp at.
func applyAt(t *testing.T, f *fsm, idx uint64, at time.Time, cmd commandType, req any) any {
	t.Helper()
	data, err := encodeCommand(cmd, req)
	if err != nil {
		t.Fatal(err)
	}
	return f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data, AppendedAt: at})
}

// TestFSMSessionLockDelayFromLogTime: a node check turning critical ends
// the session tied to it in the same entry, releasing its lock, and the
// key's lock-delay runs from that entry's time stamp, not the clock.
func TestFSMSessionLockDelayFromLogTime(t *testing.T) {
	f := newTestFSM(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	serf := func(status catalog.HealthStatus) *catalog.RegisterRequest {
		return &catalog.RegisterRequest{Datacenter: "dc1", Node: "n1", Address: "10.0.0.1",
			Checks: []*catalog.Check{{CheckID: GossipCheckID, Name: GossipCheckID, Status: status}}}
	}
	if res := applyAt(t, f, 1, t0, cmdRegister, serf(catalog.HealthPassing)); res != nil {
		t.Fatalf("register: %v", res)
	}
	for i, s := range []catalog.Session{
		{ID: "a", Node: "n1", NodeChecks: []string{GossipCheckID}, LockDelay: 5 * time.Second, Behavior: catalog.SessionRelease},
		{ID: "b", Node: "n1", Behavior: catalog.SessionRelease},
	} {
		if res := applyAt(t, f, uint64(2+i), t0, cmdSession, &catalog.SessionRequest{Op: catalog.SessionCreate, Session: s}); res != nil {
			t.Fatalf("create %s: %v", s.ID, res)
		}
	}
	lock := func(idx uint64, at time.Time, session string) any {
		return applyAt(t, f, idx, at, cmdKV, &catalog.KVRequest{Op: catalog.KVLock, Entry: catalog.KVEntry{Key: "k", Session: session}})
	}
	if res := lock(4, t0, "a"); res != true {
		t.Fatalf("a's lock: got %v, want true", res)
	}
	if res := applyAt(t, f, 5, t0.Add(time.Second), cmdRegister, serf(catalog.HealthCritical)); res != nil {
		t.Fatalf("serfHealth critical: %v", res)
	}
	if _, s, _ := f.store.SessionGet(nil, "a"); s != nil {
		t.Errorf("session a after its check turned critical: got %+v, want none", s)
	}
	if _, e, _ := f.store.KVGet(nil, "k"); e == nil || e.Session != "" || e.ModifyIndex != 5 {
		t.Errorf("k after a ended: got %+v, want released at 5", e)
	}
	if res := lock(6, t0.Add(5*time.Second), "b"); res != false {
		t.Errorf("b's lock 4s after a ended (delay 5s): got %v, want false", res)
	}
	if res := lock(7, t0.Add(6*time.Second), "b"); res != true {
		t.Errorf("b's lock 5s after a ended: got %v, want true", res)
	}
}

// TestSessionTimers: a session lives sessionTTLMultiplier TTLs without a
// renew; a renew restarts it; start gives every session its full TTL; a
// stopped timer set ignores resets.
func TestSessionTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var st sessionTimers
		now := time.Now()
		st.reset("ignored", 10*time.Second, now)
		st.start([]*catalog.Session{{ID: "a", TTL: "10s"}, {ID: "b", TTL: "30s"}, {ID: "none"}}, now)
		if ids, next := st.expired(now.Add(19 * time.Second)); len(ids) != 0 || !next.Equal(now.Add(20*time.Second)) {
			t.Errorf("expired at 19s: got %v, next %v; want none, next at 20s", ids, next.Sub(now))
		}
		st.reset("b", 30*time.Second, now.Add(10*time.Second))
		if ids, _ := st.expired(now.Add(20 * time.Second)); len(ids) != 1 || ids[0] != "a" {
			t.Errorf("expired at 20s: got %v, want [a]", ids)
		}
		if ids, next := st.expired(now.Add(60 * time.Second)); len(ids) != 0 || !next.Equal(now.Add(70*time.Second)) {
			t.Errorf("expired at 60s: got %v, next %v; want none, next at 70s (renewed at 10s)", ids, next.Sub(now))
		}
		select {
		case <-st.wakeCh():
		default:
			t.Error("a reset while running did not signal the loop")
		}
		st.remove("b")
		if ids, next := st.expired(now.Add(time.Hour)); len(ids) != 0 || !next.IsZero() {
			t.Errorf("after remove: got %v, next %v; want nothing", ids, next)
		}
		st.stop()
		st.reset("c", 10*time.Second, now)
		if ids, _ := st.expired(now.Add(time.Hour)); len(ids) != 0 {
			t.Errorf("stopped: got %v, want nothing", ids)
		}
	})
}

func (h *endpointHarness) registerNode(t *testing.T, node string, status catalog.HealthStatus) {
	t.Helper()
	h.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: node, Address: "10.0.0.1",
		Checks: []*catalog.Check{{CheckID: GossipCheckID, Name: GossipCheckID, Status: status}},
	}}, nil)
}

// TestSessionEndpoint walks a session through the endpoint: create (the
// leader picks the ID), Get, List by node and all, a lock through KVS,
// Renew, Destroy (which releases the lock), Renew and Get of a gone one.
func TestSessionEndpoint(t *testing.T) {
	h := startKVS(t, nil)
	if err := h.rpc.Register(rpc.SessionEndpoint, NewSession(h.cat)); err != nil {
		t.Fatal(err)
	}
	h.registerNode(t, "n1", catalog.HealthPassing)

	var bad rpc.SessionApplyResponse
	err := h.call(rpc.MethodSessionApply, &rpc.SessionApplyRequest{Op: catalog.SessionCreate,
		Session: catalog.Session{Node: "n1", NodeChecks: []string{"nosuch"}}}, &bad)
	expectWireError(t, err, "create tied to a missing check", "NodeChecks[0]", nil)
	err = h.call(rpc.MethodSessionApply, &rpc.SessionApplyRequest{Op: catalog.SessionCreate,
		Session: catalog.Session{Node: "n1", TTL: "1s"}}, &bad)
	expectWireError(t, err, "create with a 1s TTL", "TTL", nil)

	var created rpc.SessionApplyResponse
	h.mustCall(t, rpc.MethodSessionApply, &rpc.SessionApplyRequest{Op: catalog.SessionCreate,
		Session: catalog.Session{Name: "lock", Node: "n1", NodeChecks: []string{GossipCheckID}, TTL: "10s", LockDelay: time.Second}}, &created)
	if len(created.ID) != 36 {
		t.Fatalf("create: got ID %q, want a UUID", created.ID)
	}
	var got rpc.SessionsResponse
	h.mustCall(t, rpc.MethodSessionGet, &rpc.SessionGetRequest{ID: created.ID}, &got)
	if len(got.Sessions) != 1 || got.Sessions[0].Behavior != catalog.SessionRelease || got.Sessions[0].Name != "lock" || got.Index == 0 {
		t.Fatalf("Get: got %+v at %d", got.Sessions, got.Index)
	}
	for _, node := range []string{"n1", ""} {
		var list rpc.SessionsResponse
		h.mustCall(t, rpc.MethodSessionList, &rpc.SessionListRequest{Node: node}, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != created.ID {
			t.Errorf("List(%q): got %+v, want the session", node, list.Sessions)
		}
	}

	lock := &rpc.KVSApplyRequest{Op: catalog.KVLock, Entry: catalog.KVEntry{Key: "leader", Value: []byte("me"), Session: created.ID}}
	var res rpc.KVSApplyResponse
	h.mustCall(t, rpc.MethodKVSApply, lock, &res)
	if !res.Result {
		t.Fatal("lock: got false")
	}
	var renewed rpc.SessionsResponse
	h.mustCall(t, rpc.MethodSessionRenew, &rpc.SessionRenewRequest{ID: created.ID}, &renewed)
	if len(renewed.Sessions) != 1 || renewed.Sessions[0].ID != created.ID {
		t.Errorf("Renew: got %+v, want the session", renewed.Sessions)
	}

	h.mustCall(t, rpc.MethodSessionApply, &rpc.SessionApplyRequest{Op: catalog.SessionDestroy, Session: catalog.Session{ID: created.ID}}, &bad)
	e := h.kvGet(t, &rpc.KVSGetRequest{Key: "leader"})
	if len(e.Entries) != 1 || e.Entries[0].Session != "" || e.Entries[0].LockIndex != 1 {
		t.Errorf("leader after destroy: got %+v, want released, LockIndex 1", e.Entries)
	}
	renewed = rpc.SessionsResponse{}
	h.mustCall(t, rpc.MethodSessionRenew, &rpc.SessionRenewRequest{ID: created.ID}, &renewed)
	if len(renewed.Sessions) != 0 {
		t.Errorf("Renew of a destroyed session: got %+v, want none", renewed.Sessions)
	}
	got = rpc.SessionsResponse{}
	h.mustCall(t, rpc.MethodSessionGet, &rpc.SessionGetRequest{ID: created.ID}, &got)
	if len(got.Sessions) != 0 {
		t.Errorf("Get of a destroyed session: got %+v", got.Sessions)
	}
	// The lock of a session that does not exist is a field error.
	err = h.call(rpc.MethodKVSApply, lock, &res)
	expectWireError(t, err, "lock for a destroyed session", "Session", nil)
}

// TestSessionEndpointACL: a token with session:write on n1 (and node
// write, to register it) creates and destroys sessions there, not on n2;
// reads leave out the sessions it may not read.
func TestSessionEndpointACL(t *testing.T) {
	h := startKVS(t, func(c *CatalogConfig) { c.ACL = ACLConfig{Enabled: true} })
	if err := h.rpc.Register(rpc.SessionEndpoint, NewSession(h.cat)); err != nil {
		t.Fatal(err)
	}
	mgmt, app := h.aclTokens(t, "n1", `session "n1" { policy = "write" }`)
	for _, n := range []string{"n1", "n2"} {
		h.mustCall(t, rpc.MethodCatalogRegister, &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Token: mgmt}, Registration: catalog.RegisterRequest{
			Node: n, Address: "10.0.0.1", Checks: []*catalog.Check{{CheckID: GossipCheckID, Name: GossipCheckID, Status: catalog.HealthPassing}},
		}}, nil)
	}
	create := func(node, token string) (string, error) {
		var reply rpc.SessionApplyResponse
		err := h.call(rpc.MethodSessionApply, &rpc.SessionApplyRequest{WriteRequest: rpc.WriteRequest{Token: token},
			Op: catalog.SessionCreate, Session: catalog.Session{Node: node}}, &reply)
		return reply.ID, err
	}
	if _, err := create("n1", app); err != nil {
		t.Fatalf("create on n1 with the n1 token: %v", err)
	}
	_, err := create("n2", app)
	expectWireError(t, err, "create on n2 with the n1 token", "", rpc.ErrPermissionDenied)
	other, err := create("n2", mgmt)
	if err != nil {
		t.Fatalf("create on n2 with the management token: %v", err)
	}
	var list rpc.SessionsResponse
	h.mustCall(t, rpc.MethodSessionList, &rpc.SessionListRequest{QueryOptions: rpc.QueryOptions{Token: app}}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Node != "n1" || !list.ResultsFilteredByACLs {
		t.Errorf("list with the n1 token: got %+v (filtered %v), want n1's only, filtered", list.Sessions, list.ResultsFilteredByACLs)
	}
	var bad rpc.SessionApplyResponse
	err = h.call(rpc.MethodSessionApply, &rpc.SessionApplyRequest{WriteRequest: rpc.WriteRequest{Token: app},
		Op: catalog.SessionDestroy, Session: catalog.Session{ID: other}}, &bad)
	expectWireError(t, err, "destroy of n2's session with the n1 token", "", rpc.ErrPermissionDenied)
}
