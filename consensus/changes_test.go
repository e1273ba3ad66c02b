package consensus

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// feed starts the change feed on h's server over its port, closed at the
// end of the test.
func (h *endpointHarness) feed(t *testing.T, q rpc.QueryOptions) rpc.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.client.Stream(ctx, h.addr, rpc.MethodCatalogFeed, &rpc.ChangesRequest{QueryOptions: q})
	if err != nil {
		t.Fatalf("start the feed: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// next receives st's next reply within 10s.
func next(t *testing.T, st rpc.Stream) rpc.ChangesResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var r rpc.ChangesResponse
	if err := st.Recv(ctx, &r); err != nil {
		t.Fatalf("feed reply: %v", err)
	}
	return r
}

func TestCatalogFeed(t *testing.T) {
	t.Parallel()
	h := startEndpoint(t, true, nil)
	h.register(t, "n1", "10.0.0.1", &catalog.Service{Service: "web"})

	st := h.feed(t, rpc.QueryOptions{MaxQueryTime: 200 * time.Millisecond})
	first := next(t, st)
	if !first.Changes.Reset || first.Index == 0 || first.Index != first.Changes.Index {
		t.Fatalf("first reply: %+v, want a Reset with the store's index", first)
	}

	// Quiet: a reply with no news once MaxQueryTime has passed.
	start := time.Now()
	beat := next(t, st)
	if beat.Changes.Reset || len(beat.Changes.Services)+len(beat.Changes.Nodes) != 0 || beat.Index != first.Index {
		t.Fatalf("reply on a quiet catalog: %+v, want no news at index %d", beat, first.Index)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("reply with no news after %s, want one after MaxQueryTime (200ms)", waited)
	}

	// Each change is told once, in order, on the same stream.
	h.register(t, "n2", "10.0.0.2", &catalog.Service{Service: "API"})
	got := next(t, st)
	for len(got.Changes.Services) == 0 && !got.Changes.Reset { // heartbeats before the write landed
		got = next(t, st)
	}
	c := got.Changes
	if c.Reset || !slices.Equal(c.Services, []string{"api"}) || !slices.Equal(c.Nodes, []string{"n2"}) || got.Index <= first.Index {
		t.Fatalf("reply after a registration: %+v, want api on n2 past index %d", got, first.Index)
	}
	h.register(t, "n3", "10.0.0.3", &catalog.Service{Service: "db"})
	later := next(t, st)
	for len(later.Changes.Services) == 0 && !later.Changes.Reset {
		later = next(t, st)
	}
	if c := later.Changes; c.Reset || !slices.Equal(c.Services, []string{"db"}) || later.Index <= got.Index {
		t.Fatalf("reply after a second registration: %+v, want db alone past index %d", later, got.Index)
	}

	// An index the store has not reached (another server's, or one from
	// before a restore) is a Reset, answered at once.
	ahead := next(t, h.feed(t, rpc.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: time.Minute, AllowStale: true}))
	if !ahead.Changes.Reset || ahead.Index >= 1<<40 {
		t.Fatalf("an index ahead: %+v, want a Reset at the store's index", ahead)
	}
}

// cutProxy forwards TCP connections to a backend until cut closes them
// all and refuses new ones: a server that goes away under its streams.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, backend string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", backend)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) cut() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// TestCatalogFeedRelayGoesOn: a feed relayed from another datacenter
// whose server goes away goes on from the next server of that
// datacenter, from where it stood: the caller sees the next change, not
// an error or a Reset.
func TestCatalogFeedRelayGoesOn(t *testing.T) {
	t.Parallel()
	dcs := startTwoDCs(t)
	dcs.dc2.register(t, "n2", "10.0.2.10", &catalog.Service{Service: "web", Port: 80})
	proxy := newCutProxy(t, dcs.dc2.addr)
	dcs.router.Update([]gossip.Member{
		wanMember("s0", "dc2", proxy.ln.Addr().String(), gossip.StatusAlive),
		wanMember("s1", "dc2", dcs.dc2.addr, gossip.StatusAlive),
	})
	swap := dcs.router.Servers("dc2")[0] != proxy.ln.Addr().String()
	dcs.router.randN = func(n int) int { // the proxy first (TestForwardRetriesAnotherServer)
		if swap {
			return 0
		}
		return n - 1
	}

	st := dcs.dc1.feed(t, rpc.QueryOptions{Datacenter: "dc2", MaxQueryTime: time.Minute})
	first := next(t, st)
	if !first.Changes.Reset {
		t.Fatalf("first reply: %+v, want a Reset", first)
	}
	proxy.cut()
	dcs.dc2.register(t, "n3", "10.0.2.11", &catalog.Service{Service: "api", Port: 80})
	got := next(t, st)
	if c := got.Changes; c.Reset || !slices.Equal(c.Services, []string{"api"}) || got.Index <= first.Index {
		t.Fatalf("reply after dc2's first server went away: %+v, want api's change past %d", got, first.Index)
	}
}
