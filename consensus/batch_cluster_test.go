package consensus_test

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
	"github.com/prometheus/client_golang/prometheus"
)

// startKVCluster starts three networked servers on disk, each with its
// Catalog and KVS endpoints, and returns them with a client pool, after the leader duties of the leader reconciled once over gossip
// members that announce features[i] for nodes[i].
// fwd are the pools the servers forward with.
func startKVCluster(t *testing.T, features ...gossip.Features) (nodes []*consensustest.Node, leader *consensustest.Node, p *rpc.Pool, fwd []*rpc.Pool) {
	t.Helper()
	// Raft's timers at four times the tests' usual: hundreds of writes
	// under the race detector on a loaded machine must not depose the
	// leader.
	nodes = consensustest.StartClusterWith(t, 3, func(c *consensus.Config) {
		c.ScaleRaftTimers(4)
		c.GroupCommit = true
	})
	p = rpctest.NewPool(t)
	ms := make(members, len(nodes))
	for i, n := range nodes {
		ms[i] = gossip.Member{Name: n.ID, Node: n.ID, Addr: netip.MustParseAddr("127.0.0.1"), Status: gossip.StatusAlive,
			Datacenter: "dc1", Role: gossip.RoleServer, RPCAddr: n.Addr, Features: features[i]}
	}
	router, err := consensus.NewRouter("dc1", nil)
	if err != nil {
		t.Fatal(err)
	}
	router.Update(ms)
	for _, n := range nodes {
		cfg := consensus.DefaultCatalogConfig()
		cfg.Datacenter, cfg.Router = "dc1", router
		pool := rpctest.NewPool(t)
		fwd = append(fwd, pool)
		cat, err := consensus.NewCatalog(n.Server, pool, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cat.Close)
		if err := cat.Publish(n.RPC); err != nil {
			t.Fatal(err)
		}
		if err := n.RPC.Register(rpc.KVSEndpoint, consensus.NewKVS(cat)); err != nil {
			t.Fatal(err)
		}
	}
	leader = consensustest.WaitForLeader(t, nodes, within)
	if err := newLeader(t, testLeaderConfig(), leader.Server, ms).Reconcile(context.Background()); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return nodes, leader, p, fwd
}

// batchedForwards is how many writes the pools forwarded inside batches
// (cairn_rpc_client_batched_calls_total).
func batchedForwards(t *testing.T, pools []*rpc.Pool) float64 {
	t.Helper()
	sum := 0.0
	for _, p := range pools {
		reg := prometheus.NewRegistry()
		reg.MustRegister(p.Collectors()...)
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == "cairn_rpc_client_batched_calls_total" {
				sum += f.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	return sum
}

func raftLastIndex(t *testing.T, s *consensus.Server) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s.RaftStats()["last_log_index"], 10, 64)
	if err != nil {
		t.Fatalf("last_log_index: %v", err)
	}
	return v
}

// hammerKV has writers writers each send rounds writes, spread over every
// server (followers forward to the leader): a set of a key of its own,
// and a CAS creating a key that every writer races for in that round. It
// checks each write's answer and returns how many writes it sent.
func hammerKV(t *testing.T, nodes []*consensustest.Node, p *rpc.Pool, writers, rounds int) int {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners = map[string][]int{}
	)
	call := func(n *consensustest.Node, args *rpc.KVSApplyRequest) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		var reply rpc.KVSApplyResponse
		err := p.Call(ctx, n.Addr, rpc.MethodKVSApply, args, &reply)
		return reply.Result, err
	}
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				n := nodes[(w+r)%len(nodes)]
				key := fmt.Sprintf("own/%d/%d", w, r)
				ok, err := call(n, &rpc.KVSApplyRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: key, Value: []byte(key)}})
				if err != nil || !ok {
					t.Errorf("set %s on %s: got %v, %v; want true", key, n.ID, ok, err)
					return
				}
				race := fmt.Sprintf("race/%d", r)
				ok, err = call(n, &rpc.KVSApplyRequest{Op: catalog.KVCAS, Entry: catalog.KVEntry{Key: race, Value: []byte(strconv.Itoa(w))}})
				if err != nil {
					t.Errorf("cas %s on %s: %v", race, n.ID, err)
					return
				}
				if ok {
					mu.Lock()
					winners[race] = append(winners[race], w)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	store := nodes[0].Store
	for r := range rounds {
		race := fmt.Sprintf("race/%d", r)
		_, e, err := store.KVGet(nil, race)
		if got := winners[race]; len(got) != 1 || err != nil || e == nil || string(e.Value) != strconv.Itoa(got[0]) {
			t.Errorf("%s: winners %v, stored %+v (%v); want one winner, its value stored", race, got, e, err)
		}
	}
	return 2 * writers * rounds
}

// TestGroupCommitCluster: three servers on disk, 32 writers spread over
// them: every write gets its own answer (sets succeed, exactly one CAS
// of each race wins and its value is stored), the log holds fewer
// entries than there were writes, and the followers forwarded writes in
// batches.
func TestGroupCommitCluster(t *testing.T) {
	t.Parallel()
	all := gossip.FeatureBatchedWrites | gossip.FeatureBatchedForwards
	nodes, leader, p, fwd := startKVCluster(t, all, all, all)
	before := raftLastIndex(t, leader.Server)
	writes := hammerKV(t, nodes, p, 32, 10)
	consensustest.WaitFor(t, within, func() error {
		for _, n := range nodes {
			if _, e, _ := n.Store.KVGet(nil, "race/9"); e == nil {
				return fmt.Errorf("%s has not applied the last round", n.ID)
			}
		}
		return nil
	})
	if entries := raftLastIndex(t, leader.Server) - before; entries >= uint64(writes) {
		t.Errorf("got %d log entries for %d writes, want fewer", entries, writes)
	} else {
		t.Logf("%d log entries for %d writes", entries, writes)
	}
	if n := batchedForwards(t, fwd); n == 0 {
		t.Errorf("no write was forwarded in a batch")
	} else {
		t.Logf("%v writes forwarded in batches", n)
	}
}

// TestGroupCommitMixedCluster: while one server does not announce that it
// reads batch entries (an older version), every write is its own entry.
func TestGroupCommitMixedCluster(t *testing.T) {
	t.Parallel()
	all := gossip.FeatureBatchedWrites | gossip.FeatureBatchedForwards
	nodes, leader, p, _ := startKVCluster(t, all, 0, all)
	before := raftLastIndex(t, leader.Server)
	writes := hammerKV(t, nodes, p, 16, 5)
	if entries := raftLastIndex(t, leader.Server) - before; entries < uint64(writes) {
		t.Errorf("got %d log entries for %d writes, want one each", entries, writes)
	}
}
