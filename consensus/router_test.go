package consensus

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
)

// wanMember is a server of the WAN pool.
func wanMember(node, dc, rpcAddr string, status gossip.Status) gossip.Member {
	return gossip.Member{
		Name: node + "." + dc, Node: node, Datacenter: dc, RPCAddr: rpcAddr,
		Role: gossip.RoleServer, Status: status, ProtocolVersion: gossip.ProtocolVersionMax,
	}
}

func newTestRouter(t *testing.T, dc string) *Router {
	t.Helper()
	r, err := NewRouter(dc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouterUpdate(t *testing.T) {
	r := newTestRouter(t, "DC1")
	if got, want := r.Datacenters(), []string{"dc1"}; !slices.Equal(got, want) {
		t.Errorf("before any update: got datacenters %v, want %v", got, want)
	}
	r.Update([]gossip.Member{
		wanMember("a", "dc1", "10.0.1.1:8300", gossip.StatusAlive),
		wanMember("b", "dc2", "10.0.2.2:8300", gossip.StatusAlive),
		wanMember("a", "dc2", "10.0.2.1:8300", gossip.StatusAlive),
		wanMember("c", "dc2", "10.0.2.3:8300", gossip.StatusFailed),
		wanMember("a", "dc3", "10.0.3.1:8300", gossip.StatusFailed), // known, unreachable
		wanMember("a", "dc4", "10.0.4.1:8300", gossip.StatusLeft),   // gone
		{Name: "x.dc5", Node: "x", Datacenter: "dc5", Role: gossip.RoleClient, Status: gossip.StatusAlive},
		wanMember("a", "DC6", "10.0.6.1:8300", gossip.StatusAlive),
	})
	if got, want := r.Datacenters(), []string{"dc1", "dc2", "dc3", "dc6"}; !slices.Equal(got, want) {
		t.Errorf("got datacenters %v, want %v", got, want)
	}
	for _, tc := range []struct {
		dc    string
		want  []string
		known bool
	}{
		{"dc1", []string{"10.0.1.1:8300"}, true},
		{"dc2", []string{"10.0.2.1:8300", "10.0.2.2:8300"}, true},
		{"Dc2", []string{"10.0.2.1:8300", "10.0.2.2:8300"}, true},
		{"dc3", nil, true},
		{"dc4", nil, false},
		{"dc5", nil, false},
		{"dc6", []string{"10.0.6.1:8300"}, true},
		{"dc9", nil, false},
	} {
		if got := r.Servers(tc.dc); !slices.Equal(got, tc.want) {
			t.Errorf("Servers(%s): got %v, want %v", tc.dc, got, tc.want)
		}
		if got := r.Known(tc.dc); got != tc.known {
			t.Errorf("Known(%s): got %v, want %v", tc.dc, got, tc.known)
		}
	}

	// The next snapshot replaces the last one whole.
	r.Update([]gossip.Member{wanMember("b", "dc2", "10.0.2.2:8300", gossip.StatusLeft)})
	if got, want := r.Datacenters(), []string{"dc1"}; !slices.Equal(got, want) {
		t.Errorf("after dc2's last server left: got datacenters %v, want %v", got, want)
	}
}

func TestRouterRoute(t *testing.T) {
	r := newTestRouter(t, "dc1")
	r.Update([]gossip.Member{
		wanMember("a", "dc2", "10.0.2.1:8300", gossip.StatusAlive),
		wanMember("b", "dc2", "10.0.2.2:8300", gossip.StatusAlive),
		wanMember("c", "dc2", "10.0.2.3:8300", gossip.StatusAlive),
		wanMember("a", "dc3", "10.0.3.1:8300", gossip.StatusFailed),
	})

	// Every order is a permutation of the live servers, and the first
	// server varies: requests spread over the datacenter.
	firsts := map[string]bool{}
	for range 200 {
		got, err := r.route("dc2")
		if err != nil {
			t.Fatalf("route(dc2): %v", err)
		}
		if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, r.Servers("dc2")) {
			t.Fatalf("route(dc2): got %v, want a permutation of %v", got, r.Servers("dc2"))
		}
		firsts[got[0]] = true
	}
	if len(firsts) != 3 {
		t.Errorf("route(dc2) first servers over 200 routes: got %v, want all 3", firsts)
	}

	for _, tc := range []struct{ dc, want string }{
		{"dc9", `unknown datacenter "dc9": not a datacenter of the WAN pool (known: dc1, dc2, dc3)`},
		{"dc3", "no path to datacenter dc3: none of its servers is alive"},
		// The local datacenter is never routed: it has no server here.
		{"dc1", "no path to datacenter dc1: none of its servers is alive"},
	} {
		_, err := r.route(tc.dc)
		if !errors.Is(err, ErrNoPathToDatacenter) || err.Error() != tc.want {
			t.Errorf("route(%s): got %v, want %q wrapping ErrNoPathToDatacenter", tc.dc, err, tc.want)
		}
		// Only a datacenter the pool does not know is a client's mistake.
		if unknown := errors.Is(err, ErrUnknownDatacenter); unknown != (tc.dc == "dc9") {
			t.Errorf("route(%s): wraps ErrUnknownDatacenter %v, want %v", tc.dc, unknown, tc.dc == "dc9")
		}
	}
}

func TestNewRouterNeedsDatacenter(t *testing.T) {
	if _, err := NewRouter("", nil); err == nil {
		t.Error("NewRouter without a datacenter: got nil, want an error")
	}
}

// fakeWAN is a Membership whose members a test sets.
type fakeWAN struct {
	mu      sync.Mutex
	members []gossip.Member
	changes chan struct{}
}

func (f *fakeWAN) Members() []gossip.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.members)
}

func (f *fakeWAN) Changes() <-chan struct{} { return f.changes }

func (f *fakeWAN) set(members ...gossip.Member) {
	f.mu.Lock()
	f.members = members
	f.mu.Unlock()
	select {
	case f.changes <- struct{}{}:
	default:
	}
}

func TestRouterRunFollowsChanges(t *testing.T) {
	r := newTestRouter(t, "dc1")
	wan := &fakeWAN{changes: make(chan struct{}, 1)}
	wan.set(wanMember("a", "dc2", "10.0.2.1:8300", gossip.StatusAlive))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx, wan) })
	defer func() {
		cancel()
		wg.Wait()
	}()

	waitRouter := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s; datacenters %v", what, r.Datacenters())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRouter("dc2 joins", func() bool { return len(r.Servers("dc2")) == 1 })
	wan.set(wanMember("a", "dc2", "10.0.2.1:8300", gossip.StatusFailed))
	waitRouter("dc2's server fails", func() bool { return len(r.Servers("dc2")) == 0 && r.Known("dc2") })
	wan.set(wanMember("a", "dc2", "10.0.2.1:8300", gossip.StatusLeft))
	waitRouter("dc2's server leaves", func() bool { return !r.Known("dc2") })
}
