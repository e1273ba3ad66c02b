package consensus_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// startSnapshotCluster starts three networked servers with the Catalog and
// Snapshot endpoints, and returns them, their leader and a client pool.
func startSnapshotCluster(t *testing.T, configure ...func(*consensus.CatalogConfig)) ([]*consensustest.Node, *consensustest.Node, *rpc.Pool) {
	t.Helper()
	nodes := consensustest.StartCluster(t, 3)
	for _, n := range nodes {
		cfg := consensus.DefaultCatalogConfig()
		cfg.Datacenter = "dc1"
		for _, f := range configure {
			f(&cfg)
		}
		cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cat.Close)
		if err := cat.Publish(n.RPC); err != nil {
			t.Fatal(err)
		}
		if err := n.RPC.Register(rpc.SnapshotEndpoint, consensus.NewSnapshot(cat)); err != nil {
			t.Fatal(err)
		}
		if err := n.RPC.Register(rpc.ACLEndpoint, consensus.NewACL(cat)); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, consensustest.WaitForLeader(t, nodes, within), rpctest.NewPool(t)
}

// registerFixture writes two nodes with services and checks through n.
func registerFixture(t *testing.T, p *rpc.Pool, n *consensustest.Node, prefix string) {
	t.Helper()
	for _, reg := range []catalog.RegisterRequest{
		{Node: prefix + "-a", Address: "10.0.0.1", NodeMeta: map[string]string{"rack": "r1"},
			Service: &catalog.Service{ID: "web-1", Service: "web", Tags: []string{"v1"}, Port: 80},
			Checks:  []*catalog.Check{{CheckID: "web-ttl", Name: "web", Status: catalog.HealthWarning, ServiceID: "web-1", Type: "ttl"}}},
		{Node: prefix + "-b", Address: "10.0.0.2",
			Service: &catalog.Service{ID: "db", Service: "db", Port: 5432},
			Checks:  []*catalog.Check{{CheckID: "disk", Name: "disk", Status: catalog.HealthPassing}}},
	} {
		reg.Datacenter = "dc1"
		var out struct{}
		catalogCall(t, p, n, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: reg}, &out)
	}
}

// sameCatalog fails unless the stores hold the same nodes, services and
// checks (their raft indexes included).
func sameCatalog(got, want *catalog.Dump) error {
	if !reflect.DeepEqual(got.Nodes, want.Nodes) || !reflect.DeepEqual(got.Services, want.Services) || !reflect.DeepEqual(got.Checks, want.Checks) {
		return fmt.Errorf("got catalog %s, want %s", catalogString(got), catalogString(want))
	}
	return nil
}

func catalogString(d *catalog.Dump) string {
	s := fmt.Sprintf("index %d", d.Index)
	for _, n := range d.Nodes {
		s += fmt.Sprintf(" node%+v", *n)
	}
	for _, sv := range d.Services {
		s += fmt.Sprintf(" service %s%+v", sv.Node, *sv.Service)
	}
	for _, c := range d.Checks {
		s += fmt.Sprintf(" check%+v", *c)
	}
	return s
}

// TestSnapshotSaveRestoreAcrossClusters saves the catalog of one cluster
// through a follower, restores it through a follower of another cluster
// that has data of its own, and finds the first cluster's catalog on every
// server of the second, at an index above any the second had used.
func TestSnapshotSaveRestoreAcrossClusters(t *testing.T) {
	nodesA, leaderA, p := startSnapshotCluster(t)
	registerFixture(t, p, catalogFollowers(nodesA)[0], "src")
	var saved rpc.SnapshotSaveResponse
	catalogCall(t, p, catalogFollowers(nodesA)[0], rpc.MethodSnapshotSave, &rpc.SnapshotSaveRequest{}, &saved)
	wantDump, err := leaderA.Store.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if saved.Index != wantDump.Index || len(saved.Archive) == 0 {
		t.Fatalf("saved index %d (%d bytes), want %d", saved.Index, len(saved.Archive), wantDump.Index)
	}

	nodesB, leaderB, _ := startSnapshotCluster(t)
	for i := range 3 { // data of its own, and its index past cluster A's
		registerFixture(t, p, leaderB, fmt.Sprintf("other%d", i))
	}
	before := leaderB.Store.Index()
	if before <= wantDump.Index {
		t.Fatalf("cluster B at index %d, want it past A's %d", before, wantDump.Index)
	}
	var restored rpc.SnapshotRestoreResponse
	catalogCall(t, p, catalogFollowers(nodesB)[0], rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{Archive: saved.Archive}, &restored)
	if restored.Index <= before || restored.SavedIndex != wantDump.Index || restored.SavedDatacenter != "dc1" {
		t.Errorf("got restore reply %+v, want an index past %d, saved at %d in dc1", restored, before, wantDump.Index)
	}
	for _, n := range nodesB {
		consensustest.WaitFor(t, within, func() error {
			got, err := n.Store.Dump()
			if err != nil {
				return err
			}
			if got.Index != restored.Index {
				return fmt.Errorf("%s: at index %d, want %d", n.ID, got.Index, restored.Index)
			}
			return sameCatalog(got, wantDump)
		})
	}
	// Writes go on above the restored index.
	registerFixture(t, p, leaderB, "after")
	if idx := leaderB.Store.Index(); idx <= restored.Index {
		t.Errorf("a write after the restore is at index %d, want past %d", idx, restored.Index)
	}
}

// TestSnapshotForwardsGetSnapshotWait: a save and a restore sent to a
// follower are forwarded to the leader with rpc.SnapshotWait on top of
// ForwardTimeout, as a blocking query's wait is, since a large catalog
// takes longer than a write (examples/bench/scale: a restore of 100,000
// instances with checks outlasted the 15s ForwardTimeout and failed with
// a 500 while the leader went on). A ForwardTimeout of 1ns stands for a
// restore that outlasts it.
func TestSnapshotForwardsGetSnapshotWait(t *testing.T) {
	nodes, leader, p := startSnapshotCluster(t, func(c *consensus.CatalogConfig) { c.ForwardTimeout = time.Nanosecond })
	follower := catalogFollowers(nodes)[0]
	registerFixture(t, p, leader, "src")
	var saved rpc.SnapshotSaveResponse
	catalogCall(t, p, follower, rpc.MethodSnapshotSave, &rpc.SnapshotSaveRequest{}, &saved)
	var restored rpc.SnapshotRestoreResponse
	catalogCall(t, p, follower, rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{Archive: saved.Archive}, &restored)
	if restored.SavedIndex != saved.Index {
		t.Errorf("restored an archive saved at index %d, want %d", restored.SavedIndex, saved.Index)
	}
	for _, args := range []rpc.Blocking{&rpc.SnapshotSaveRequest{}, &rpc.SnapshotRestoreRequest{}} {
		if got := args.MaxBlockingWait(); got != rpc.SnapshotWait {
			t.Errorf("%T: MaxBlockingWait %s, want rpc.SnapshotWait (%s), which a client agent's hold adds", args, got, rpc.SnapshotWait)
		}
	}
}

// TestSnapshotRestoreRefusesCorruptArchive sends a damaged archive: it is
// refused with a FieldError naming "snapshot" and the catalog is left as
// it was.
func TestSnapshotRestoreRefusesCorruptArchive(t *testing.T) {
	nodes, leader, p := startSnapshotCluster(t)
	registerFixture(t, p, leader, "src")
	var saved rpc.SnapshotSaveResponse
	catalogCall(t, p, leader, rpc.MethodSnapshotSave, &rpc.SnapshotSaveRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}}, &saved)
	before, err := leader.Store.Dump()
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), saved.Archive...)
	bad[len(bad)/2] ^= 0x01
	for _, n := range nodes {
		var reply rpc.SnapshotRestoreResponse
		err := callErr(p, n, rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{Archive: bad}, &reply)
		var fe *catalog.FieldError
		if !errors.As(err, &fe) || fe.Field != "snapshot" {
			t.Errorf("%s: got error %v, want a FieldError naming snapshot", n.ID, err)
		}
	}
	after, err := leader.Store.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if after.Index != before.Index {
		t.Errorf("index moved from %d to %d", before.Index, after.Index)
	}
	if err := sameCatalog(after, before); err != nil {
		t.Error(err)
	}
}

// TestSnapshotRestoreIsAuthorizedBeforeItIsInflated sends a 400 KB archive
// that inflates to 400 MiB without a management token to a follower and
// to the leader of a cluster with ACLs on: each refuses it, and no server
// inflated a byte of it (a follower used to check its checksums first,
// inflating it whole for a caller with no token). Authorize answers as a
// restore would. A management token's restore through a follower is
// inflated by the leader alone.
func TestSnapshotRestoreIsAuthorizedBeforeItIsInflated(t *testing.T) {
	nodes, leader, p := startSnapshotCluster(t, func(c *consensus.CatalogConfig) { c.ACL = consensus.ACLConfig{Enabled: true} })
	var boot rpc.ACLTokenResponse
	catalogCall(t, p, leader, rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{}, &boot)
	mgmt := boot.Token.SecretID
	for _, n := range nodes { // each server authorizes from its own copy of the tokens
		waittest.For(t, within, "the management token on "+n.ID, func() error {
			return callErr(p, n, rpc.MethodSnapshotAuthorize, &rpc.SnapshotAuthorizeRequest{QueryOptions: rpc.QueryOptions{Token: mgmt}}, &struct{}{})
		})
	}
	var saved rpc.SnapshotSaveResponse
	catalogCall(t, p, leader, rpc.MethodSnapshotSave, &rpc.SnapshotSaveRequest{QueryOptions: rpc.QueryOptions{Token: mgmt}}, &saved)
	before, err := leader.Store.Dump()
	if err != nil {
		t.Fatal(err)
	}
	bomb := consensustest.ArchiveBomb(t, 400<<20)
	for _, n := range nodes {
		for _, tok := range []string{"", "anonymous"} {
			err := callErr(p, n, rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{WriteRequest: rpc.WriteRequest{Token: tok}, Archive: bomb}, &rpc.SnapshotRestoreResponse{})
			if !errors.Is(err, rpc.ErrPermissionDenied) {
				t.Errorf("restore a bomb on %s with token %q: got %v, want permission denied", n.ID, tok, err)
			}
			err = callErr(p, n, rpc.MethodSnapshotAuthorize, &rpc.SnapshotAuthorizeRequest{QueryOptions: rpc.QueryOptions{Token: tok}}, &struct{}{})
			if !errors.Is(err, rpc.ErrPermissionDenied) {
				t.Errorf("authorize on %s with token %q: got %v, want permission denied", n.ID, tok, err)
			}
		}
	}
	for _, n := range nodes {
		if got := n.Server.SnapshotInflatedBytes(); got != 0 {
			t.Errorf("%s inflated %d bytes of refused archives, want none", n.ID, got)
		}
	}
	after, err := leader.Store.Dump()
	if err != nil {
		t.Fatal(err)
	}
	if after.Index != before.Index {
		t.Errorf("refused restores moved the index from %d to %d", before.Index, after.Index)
	}

	follower := catalogFollowers(nodes)[0]
	catalogCall(t, p, follower, rpc.MethodSnapshotRestore, &rpc.SnapshotRestoreRequest{WriteRequest: rpc.WriteRequest{Token: mgmt}, Archive: saved.Archive}, &rpc.SnapshotRestoreResponse{})
	for _, n := range nodes {
		if got := n.Server.SnapshotInflatedBytes(); (got > 0) != (n == leader) {
			t.Errorf("%s (leader %v) inflated %d bytes of the restored archive; only the leader inflates", n.ID, n == leader, got)
		}
	}
}
