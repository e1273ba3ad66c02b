package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
)

// TestCrossDCBlockingReadKeepsItsEnd (issue 28, build 3): a blocking read
// that dc1's server forwarded to a server of dc2 keeps the end of its wait
// when that server goes away mid-wait (the leader, when dc1 picked it, or
// the follower that forwarded it to the leader): the next server of dc2
// is asked only for what is left, and the read ends about when its wait
// does, with the current index, not with an error or after a second full
// wait.
func TestCrossDCBlockingReadKeepsItsEnd(t *testing.T) {
	t.Parallel()
	d := startTwoDCs(t)
	dc1Srv := d.dc1.RPCAddr(0)
	put := &rpc.KVSApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: "dc2"}, Op: catalog.KVSet,
		Entry: catalog.KVEntry{Key: "k", Value: []byte("v")}}
	waittest.For(t, 30*time.Second, "k written in dc2 through dc1", func() error {
		return d.call(dc1Srv, rpc.MethodKVSApply, put, &rpc.KVSApplyResponse{})
	})
	get := func() *rpc.KVSGetRequest {
		return &rpc.KVSGetRequest{QueryOptions: rpc.QueryOptions{Datacenter: "dc2"}, Key: "k"}
	}
	var cur rpc.KVSEntriesResponse
	if err := d.call(dc1Srv, rpc.MethodKVSGet, get(), &cur); err != nil {
		t.Fatal(err)
	}

	const wait = 10 * time.Second
	args := get()
	args.MinQueryIndex, args.MaxQueryTime = cur.Index, wait
	errc := make(chan error, 1)
	var reply rpc.KVSEntriesResponse
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errc <- d.pool.Call(ctx, dc1Srv, rpc.MethodKVSGet, args, &reply)
	}()

	// The dc2 servers holding the read: the one dc1 sent it to, and the
	// leader it forwarded it to if that is another.
	var holders []int
	waittest.For(t, 10*time.Second, "the read held in dc2", func() error {
		holders = holders[:0]
		for i, a := range d.dc2.Agents {
			code, body := call(t, a, "", "GET", "/v1/agent/metrics?format=prometheus", nil)
			if code != http.StatusOK {
				return fmt.Errorf("metrics of %s: %d", d.dc2.Configs[i].NodeName, code)
			}
			if strings.Contains(string(body), `cairn_rpc_blocking_queries{method="KVS.Get"} 1`) {
				holders = append(holders, i)
			}
		}
		if len(holders) == 0 {
			return fmt.Errorf("no dc2 server holds it")
		}
		return nil
	})
	gone := holders[0]
	if len(holders) > 1 {
		leader := leaderOf(t, d.dc2, []int{0, 1, 2}, 3)
		for _, i := range holders {
			if i != leader {
				gone = i
			}
		}
	}
	time.Sleep(time.Until(start.Add(wait / 2))) // the fault halfway through the wait
	t.Logf("stopping %s (holders %v)", d.dc2.Configs[gone].NodeName, holders)
	agenttest.Stop(t, d.dc2.Agents[gone])

	var err error
	select {
	case err = <-errc:
	case <-time.After(2 * wait):
		t.Fatal("the blocking read did not return")
	}
	elapsed := time.Since(start)
	// Its wait, the remote server's jitter, an election in dc2.
	bound := wait + wait/16 + 3*time.Second
	switch {
	case err != nil:
		t.Errorf("blocking read across the loss of its dc2 server failed after %s: %v", elapsed.Round(time.Millisecond), err)
	case elapsed > bound:
		t.Errorf("blocking read of %s took %s, want at most %s (a second full wait on the next server?)", wait, elapsed.Round(time.Millisecond), bound)
	case reply.Index != cur.Index:
		t.Errorf("got index %d, want the current %d", reply.Index, cur.Index)
	}
	t.Logf("answered after %s", elapsed.Round(time.Millisecond))
}
