package consensus_test

import (
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// TestTxnEndpointForwarding sends a transaction to a follower of a real
// three-server cluster: it is applied through the leader, all of it at
// one index, and a rolled-back one leaves every server's store unchanged.
func TestTxnEndpointForwarding(t *testing.T) {
	t.Parallel()
	nodes := consensustest.StartCluster(t, 3)
	for _, n := range nodes {
		cfg := consensus.DefaultCatalogConfig()
		cfg.Datacenter = "dc1"
		cat, err := consensus.NewCatalog(n.Server, rpctest.NewPool(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cat.Close)
		if err := n.RPC.Register(rpc.TxnEndpoint, consensus.NewTxn(cat)); err != nil {
			t.Fatal(err)
		}
	}
	p := rpctest.NewPool(t)
	leader := consensustest.WaitForLeader(t, nodes, within)
	f := catalogFollowers(nodes)[0]

	set := func(key string) catalog.TxnOp {
		return catalog.TxnOp{KV: &catalog.KVRequest{Op: catalog.KVSet, Entry: catalog.KVEntry{Key: key, Value: []byte(key)}}}
	}
	var reply rpc.TxnResponse
	catalogCall(t, p, f, rpc.MethodTxnApply, &rpc.TxnApplyRequest{Ops: []catalog.TxnOp{set("t/a"), set("t/b")}}, &reply)
	if len(reply.Errors) != 0 || len(reply.Results) != 2 || reply.Results[0].KV.ModifyIndex != reply.Results[1].KV.ModifyIndex {
		t.Fatalf("Apply on a follower: got %+v; want two results at one index", reply)
	}
	at := reply.Results[0].KV.ModifyIndex
	_, onLeader, err := leader.Store.KVList(nil, "t/")
	if err != nil || len(onLeader) != 2 {
		t.Fatalf("leader's store after the txn: got %d entries (%v), want 2", len(onLeader), err)
	}

	missing := catalog.TxnOp{KV: &catalog.KVRequest{Op: catalog.KVGet, Entry: catalog.KVEntry{Key: "t/missing"}}}
	reply = rpc.TxnResponse{}
	catalogCall(t, p, f, rpc.MethodTxnApply, &rpc.TxnApplyRequest{Ops: []catalog.TxnOp{set("t/c"), missing}}, &reply)
	if len(reply.Errors) != 1 || reply.Errors[0].OpIndex != 1 || reply.Results != nil {
		t.Fatalf("Apply with a get of a missing key: got %+v; want an error at op 1", reply)
	}
	// The rolled-back entry took a log index: once every server has
	// applied past it, none holds t/c.
	consensustest.WaitFor(t, within, func() error {
		for _, n := range nodes {
			if _, e, err := n.Store.KVGet(nil, "t/c"); err != nil || e != nil {
				t.Fatalf("%s holds t/c after the rolled-back txn: %+v, %v", n.ID, e, err)
			}
			if _, e, _ := n.Store.KVGet(nil, "t/b"); e == nil || e.ModifyIndex != at {
				return errNotYet(n.ID)
			}
		}
		return nil
	})
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) + " has not applied t/b yet" }
