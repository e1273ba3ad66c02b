package dnssource

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// serverWithoutFeed stands in for servers of a release that serves the
// catalog's reads but not its feed (a renamed feed RPC): its Catalog
// answers ServiceInstances with the instances it holds.
type serverWithoutFeed struct {
	addr atomic.Pointer[string] // the one instance of "web"
}

func (s *serverWithoutFeed) ServiceInstances(_ context.Context, args *rpc.ServiceInstancesRequest, reply *rpc.ServiceInstancesResponse) error {
	if args.Service == "web" {
		reply.Instances = []catalog.ServiceInstance{{Node: &catalog.Node{Node: "n1", Address: *s.addr.Load()},
			Service: &catalog.Service{ID: "web", Service: "web", Port: 80}}}
	}
	reply.Index = 10
	return nil
}

func (*serverWithoutFeed) RPCNeeds() rpc.Needs {
	return rpc.Needs{"ServiceInstances": rpc.NeedPublic()}
}

// TestOldServerWithoutFeedServFailsPastMaxStale: against a real rpc
// server that answers reads but has no Catalog.Feed ("can't find
// method"), the agent's source answers from its cache up to max_stale,
// then fails (SERVFAIL) for cached and new names alike, rather than
// answering what it cannot keep current; once the server serves the
// feed, the names answer again, current.
func TestOldServerWithoutFeedServFailsPastMaxStale(t *testing.T) {
	t.Parallel()
	old := &serverWithoutFeed{}
	addr := "10.0.0.1"
	old.addr.Store(&addr)
	rs := rpctest.StartServer(t, map[string]any{rpc.CatalogEndpoint: old})
	pool := rpctest.NewPool(t)
	d := door.NewClient(door.DefaultConfig(), pool, func() []string { return []string{rs.Addr().String()} }, slog.New(slog.DiscardHandler))
	cfg := cache.DefaultConfig()
	cfg.StaleAfter, cfg.MaxStale = 200*time.Millisecond, 2*time.Second
	cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	src, err := New(Config{Cache: cfg, Datacenter: "dc1", Node: "agent"}, Deps{Door: d, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	ctx := testContext(t)

	start := time.Now()
	set, err := src.Instances(ctx, "dc1", "web", "")
	if err != nil || len(set.Healthy) != 1 {
		t.Fatalf("first question: got %+v, %v; want web's instance", set, err)
	}
	addr2 := "10.0.0.2" // a change the agent cannot hear of
	old.addr.Store(&addr2)
	waittest.For(t, 10*time.Second, "questions to fail past max_stale", func() error {
		_, err := src.Instances(ctx, "dc1", "web", "")
		if !errors.Is(err, cache.ErrFeedFailing) || !strings.Contains(err.Error(), "can't find method") {
			return errors.New("web: not failing yet")
		}
		return nil
	})
	if since := time.Since(start); since < cfg.MaxStale {
		t.Errorf("failed %v after the first question, before max_stale (%v)", since, cfg.MaxStale)
	}
	if _, err := src.Instances(ctx, "dc1", "api", ""); !errors.Is(err, cache.ErrFeedFailing) {
		t.Errorf("a new name past max_stale: got %v, want %v", err, cache.ErrFeedFailing)
	}
	// An HTTP ?cached read of it is a 503 (no server answered), not a 500.
	if _, _, _, _, err := src.cachedInstances(ctx, "web", ""); !errors.Is(err, rpc.ErrTransport) || !errors.Is(err, cache.ErrFeedFailing) {
		t.Errorf("a ?cached read past max_stale: got %v, want %v wrapping %v", err, rpc.ErrTransport, cache.ErrFeedFailing)
	}

	// The server learns the feed (upgraded): one reset, then heartbeats.
	err = rpc.RegisterStream(rs, rpc.MethodCatalogFeed, rpc.NeedPublic(), func(ctx context.Context, _ *rpc.ChangesRequest, send func(*rpc.ChangesResponse) error) error {
		var r rpc.ChangesResponse
		r.Index, r.Changes.Index, r.Changes.Reset = 10, 10, true
		for {
			if err := send(&r); err != nil {
				return err
			}
			r.Changes.Reset = false
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(feedHeartbeat):
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 10*time.Second, "web to answer again, current", func() error {
		set, err := src.Instances(ctx, "dc1", "web", "")
		if err != nil {
			return err
		}
		if len(set.Healthy) != 1 || set.Healthy[0].Node.Address != addr2 {
			return errors.New("web: not current yet")
		}
		return nil
	})
}
