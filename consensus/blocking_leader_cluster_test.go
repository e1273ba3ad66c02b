package consensus_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus/consensustest"
	"github.com/cairndns/cairn/rpc"
)

// TestBlockingReadSpansLeaderChange: blocking reads forwarded by both
// followers (one over the port, one in process, as the follower's own
// HTTP API calls it) wait at the current index with no data change while
// the leader hands leadership over, and then while the leader stops. Each
// ends about when its wait does, with the current index and data, as a
// wait that ran out does: not with an error, and not after a second full
// wait on the new leader (which, with the caller's hold past the wait,
// ended as a 500 on the follower and a 503 on a client: issue 28).
func TestBlockingReadSpansLeaderChange(t *testing.T) {
	t.Parallel()
	nodes, p := startCatalogCluster(t)
	leader := consensustest.WaitForLeader(t, nodes, within)
	catalogCall(t, p, leader, rpc.MethodCatalogRegister, &rpc.RegisterRequest{Registration: catalog.RegisterRequest{
		Node: "client1", Address: "10.0.0.1", Service: &catalog.Service{Service: "web", Port: 80},
	}}, nil)

	const wait = 6 * time.Second
	// The longest a read may take: its wait, the server's jitter (1/16),
	// and a new leader's election on a loaded machine.
	const bound = wait + wait/16 + 2*time.Second
	const hold = 7 * time.Second // a client agent's rpc_hold_timeout, past the wait

	for _, fault := range []struct {
		name  string
		apply func(t *testing.T, leader *consensustest.Node)
	}{
		{"leadership transfer", func(t *testing.T, leader *consensustest.Node) {
			if err := leader.Server.TransferLeadership(context.Background(), ""); err != nil {
				t.Errorf("TransferLeadership on %s: %v", leader.ID, err)
			}
		}},
		{"leader stops", func(t *testing.T, leader *consensustest.Node) { leader.Stop() }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			leader := consensustest.WaitForLeader(t, nodes, within)
			followers := catalogFollowers(nodes)
			var running []*consensustest.Node
			for _, n := range followers {
				if n.Running() {
					running = append(running, n)
				}
			}
			if len(running) != 2 {
				t.Fatalf("got %d running followers, want 2", len(running))
			}
			var cur rpc.ServiceInstancesResponse
			catalogCall(t, p, running[0], rpc.MethodCatalogServiceInstances, &rpc.ServiceInstancesRequest{Service: "web"}, &cur)

			type result struct {
				door    string
				reply   rpc.ServiceInstancesResponse
				err     error
				elapsed time.Duration
			}
			results := make(chan result, 2)
			doors := []struct {
				name string
				call func(ctx context.Context, args *rpc.ServiceInstancesRequest, reply *rpc.ServiceInstancesResponse) error
			}{
				{"over the port to " + running[0].ID, func(ctx context.Context, args *rpc.ServiceInstancesRequest, reply *rpc.ServiceInstancesResponse) error {
					return p.Call(ctx, running[0].Addr, rpc.MethodCatalogServiceInstances, args, reply)
				}},
				{"in process on " + running[1].ID, func(ctx context.Context, args *rpc.ServiceInstancesRequest, reply *rpc.ServiceInstancesResponse) error {
					return running[1].RPC.Call(ctx, rpc.MethodCatalogServiceInstances, args, reply)
				}},
			}
			start := time.Now()
			for _, door := range doors {
				go func() {
					r := result{door: door.name}
					ctx, cancel := context.WithTimeout(context.Background(), wait+hold)
					defer cancel()
					r.err = door.call(ctx, &rpc.ServiceInstancesRequest{
						QueryOptions: rpc.QueryOptions{MinQueryIndex: cur.Index, MaxQueryTime: wait},
						Service:      "web",
					}, &r.reply)
					r.elapsed = time.Since(start)
					results <- r
				}()
			}
			// The change comes halfway through the wait, once both reads
			// are surely forwarded and waiting on the leader.
			time.Sleep(wait / 2)
			fault.apply(t, leader)

			for range doors {
				r := <-results
				switch {
				case r.err != nil:
					t.Errorf("%s: blocking read across the change failed after %s: %v", r.door, r.elapsed.Round(time.Millisecond), r.err)
				case r.elapsed > bound:
					t.Errorf("%s: blocking read of %s took %s, want at most %s (a second wait on the new leader?)", r.door, wait, r.elapsed.Round(time.Millisecond), bound)
				case r.elapsed < wait:
					t.Errorf("%s: blocking read of %s ended after %s, before its wait with no data change", r.door, wait, r.elapsed.Round(time.Millisecond))
				case r.reply.Index != cur.Index || len(r.reply.Instances) != 1:
					t.Errorf("%s: got index %d and %d instances, want the current %d and 1", r.door, r.reply.Index, len(r.reply.Instances), cur.Index)
				}
			}
		})
	}
}
