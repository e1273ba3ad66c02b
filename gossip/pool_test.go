package gossip_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// wait is the deadline for anything gossip has to spread: with FastTiming
// everything here happens in well under a second on loopback.
const wait = 10 * time.Second

// startThree starts server s1 and clients c1, c2 in dc1 and joins the
// clients to s1.
func startThree(t *testing.T) (s1, c1, c2 *gossip.Pool) {
	t.Helper()
	s1 = gossiptest.Start(t, gossiptest.LANConfig("s1", "dc1", gossip.RoleServer))
	c1 = gossiptest.Start(t, gossiptest.LANConfig("c1", "dc1", gossip.RoleClient))
	c2 = gossiptest.Start(t, gossiptest.LANConfig("c2", "dc1", gossip.RoleClient))
	gossiptest.Join(t, c1, s1)
	gossiptest.Join(t, c2, s1)
	return s1, c1, c2
}

func TestJoinThreeSeeAllAliveWithMetadata(t *testing.T) {
	s1, c1, c2 := startThree(t)
	pools := []*gossip.Pool{s1, c1, c2}
	for _, name := range []string{"s1", "c1", "c2"} {
		gossiptest.WaitStatus(t, wait, name, gossip.StatusAlive, pools...)
	}
	want := map[string]struct {
		role gossip.Role
		rpc  string
	}{
		"c1": {gossip.RoleClient, ""},
		"c2": {gossip.RoleClient, ""},
		"s1": {gossip.RoleServer, gossiptest.RPCAddr("s1")},
	}
	loopback := netip.MustParseAddr("127.0.0.1")
	for _, p := range pools {
		got := p.Members()
		if len(got) != 3 {
			t.Fatalf("%s: got %d members, want 3: %+v", p.LocalMember().Name, len(got), got)
		}
		for i, m := range got {
			if i > 0 && got[i-1].Name >= m.Name {
				t.Errorf("%s: members not sorted by name: %q before %q", p.LocalMember().Name, got[i-1].Name, m.Name)
			}
			w := want[m.Name]
			if m.Node != m.Name || m.Role != w.role || m.RPCAddr != w.rpc || m.Datacenter != "dc1" ||
				m.ProtocolVersion != gossip.ProtocolVersionMax || m.Addr != loopback || m.Port == 0 ||
				m.Status != gossip.StatusAlive || m.IsServer() != (w.role == gossip.RoleServer) {
				t.Errorf("%s sees %+v; want role %s, rpc %q, dc1, protocol %d, alive on 127.0.0.1",
					p.LocalMember().Name, m, w.role, w.rpc, gossip.ProtocolVersionMax)
			}
		}
	}
	if got, want := c1.LocalMember().Port, c1.Members()[0].Port; got == 0 || got != want {
		t.Errorf("c1 LocalMember port %d, as seen in its own snapshot %d; want equal and non-zero", got, want)
	}
}

func TestLeaveIsLeftShutdownIsFailed(t *testing.T) {
	s1, c1, c2 := startThree(t)
	for _, name := range []string{"s1", "c1", "c2"} {
		gossiptest.WaitStatus(t, wait, name, gossip.StatusAlive, s1, c1, c2)
	}

	start := time.Now()
	if err := c1.Leave(time.Second); err != nil {
		t.Fatalf("c1 Leave: %v", err)
	}
	if got := c1.LocalMember().Status; got != gossip.StatusLeft {
		t.Errorf("c1 sees itself %v after Leave, want left", got)
	}
	gossiptest.WaitStatus(t, wait, "c1", gossip.StatusLeft, s1, c2)
	t.Logf("leave seen by all in %s", time.Since(start))

	start = time.Now()
	if err := c2.Shutdown(); err != nil {
		t.Fatalf("c2 Shutdown: %v", err)
	}
	gossiptest.WaitStatus(t, wait, "c2", gossip.StatusFailed, s1)
	t.Logf("failure detected in %s", time.Since(start))

	// Failed and left members stay in the snapshot, with the time they
	// changed.
	for _, m := range s1.Members() {
		if m.Status != gossip.StatusAlive && (m.Since.IsZero() || m.Role != gossip.RoleClient) {
			t.Errorf("s1 sees %+v; want Since set and metadata kept", m)
		}
	}
}

func TestChangesSignalsAndCoalesces(t *testing.T) {
	a := gossiptest.Start(t, gossiptest.LANConfig("a", "dc1", gossip.RoleClient))
	changes := a.Changes()
	if a.Changes() != changes {
		t.Fatal("Changes returned a different channel on the second call")
	}
	// a's own join was signalled by New.
	expectSignal(t, changes, "own join")
	expectQuiet(t, changes, "after own join")
	v := a.Version()
	if v == 0 {
		t.Fatal("Version did not count a's own join")
	}

	b := gossiptest.Start(t, gossiptest.LANConfig("b", "dc1", gossip.RoleClient))
	c := gossiptest.Start(t, gossiptest.LANConfig("c", "dc1", gossip.RoleClient))
	gossiptest.Join(t, b, a)
	gossiptest.Join(t, c, a)
	gossiptest.WaitStatus(t, wait, "c", gossip.StatusAlive, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a)
	// Two joins, not read in between: one signal.
	expectSignal(t, changes, "joins")
	expectQuiet(t, changes, "after joins were read")
	if got := a.Version(); got < v+2 {
		t.Fatalf("Version after two joins = %d, want at least %d", got, v+2)
	}
	v = a.Version()

	if err := b.Leave(time.Second); err != nil {
		t.Fatalf("b Leave: %v", err)
	}
	expectSignal(t, changes, "leave")
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusLeft, a)
	if got := a.Version(); got <= v {
		t.Fatalf("Version after a leave = %d, want more than %d", got, v)
	}
	v = a.Version()

	if err := c.Shutdown(); err != nil {
		t.Fatalf("c Shutdown: %v", err)
	}
	gossiptest.WaitStatus(t, wait, "c", gossip.StatusFailed, a)
	expectSignal(t, changes, "failure")
	if got := a.Version(); got <= v {
		t.Fatalf("Version after a failure = %d, want more than %d", got, v)
	}
}

func expectSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("no change signal for %s within %s", what, wait)
	}
}

func expectQuiet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("unexpected change signal %s", what)
	default:
	}
}

func TestWANNamesAreNodeDotDatacenter(t *testing.T) {
	a := gossiptest.Start(t, gossiptest.WANConfig("s1", "dc1"))
	b := gossiptest.Start(t, gossiptest.WANConfig("s1", "dc2"))
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "s1.dc1", gossip.StatusAlive, a, b)
	gossiptest.WaitStatus(t, wait, "s1.dc2", gossip.StatusAlive, a, b)
	for _, m := range a.Members() {
		want := "s1." + m.Datacenter
		if m.Name != want || m.Node != "s1" || m.Role != gossip.RoleServer || m.RPCAddr != gossiptest.RPCAddr("s1") {
			t.Errorf("a sees %+v; want name %q, node s1, a server with its RPC address", m, want)
		}
	}
	if got := b.LocalMember().Name; got != "s1.dc2" {
		t.Errorf("b LocalMember name %q, want s1.dc2", got)
	}
}

func TestLANRefusesOtherDatacenter(t *testing.T) {
	a := gossiptest.Start(t, gossiptest.LANConfig("a", "dc1", gossip.RoleClient))
	b := gossiptest.Start(t, gossiptest.LANConfig("b", "dc2", gossip.RoleClient))
	n, err := b.Join(t.Context(), []string{gossiptest.Addr(a)})
	if err == nil || n != 0 || !strings.Contains(err.Error(), `is in datacenter "dc1"`) {
		t.Fatalf("dc2 joining dc1: Join = %d, %v; want 0 and an error naming the datacenter", n, err)
	}
	for _, p := range []*gossip.Pool{a, b} {
		if got := p.Members(); len(got) != 1 {
			t.Errorf("%s has %d members after a refused join, want 1: %+v", p.LocalMember().Name, len(got), got)
		}
	}
}

func TestEncryption(t *testing.T) {
	key := []byte("0123456789abcdef")
	cfg := func(node string, key []byte) gossip.Config {
		c := gossiptest.LANConfig(node, "dc1", gossip.RoleClient)
		c.EncryptKey = key
		return c
	}
	a := gossiptest.Start(t, cfg("a", key))
	b := gossiptest.Start(t, cfg("b", key))
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a)

	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"other-key", []byte("fedcba9876543210fedcba9876543210")},
		{"no-key", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := gossiptest.Start(t, cfg("c", tc.key))
			n, err := c.Join(t.Context(), []string{gossiptest.Addr(a)})
			if err == nil && n > 0 {
				t.Fatalf("Join with %s = %d, nil; want 0 or an error", tc.name, n)
			}
			if got := gossiptest.Status(a, "c"); got != 0 {
				t.Errorf("a sees c as %v, want unknown", got)
			}
		})
	}
}

func TestLifecycleAfterShutdown(t *testing.T) {
	p := gossiptest.Start(t, gossiptest.LANConfig("a", "dc1", gossip.RoleClient))
	if err := p.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := p.Shutdown(); err != nil {
		t.Errorf("second Shutdown: %v, want nil", err)
	}
	if _, err := p.Join(t.Context(), []string{"127.0.0.1:1"}); !errors.Is(err, gossip.ErrShutdown) {
		t.Errorf("Join after Shutdown: %v, want ErrShutdown", err)
	}
	if err := p.Leave(time.Second); !errors.Is(err, gossip.ErrShutdown) {
		t.Errorf("Leave after Shutdown: %v, want ErrShutdown", err)
	}
	if got := p.LocalMember().Name; got != "a" {
		t.Errorf("LocalMember after Shutdown: name %q, want a", got)
	}
}

func TestJoinCanceledContext(t *testing.T) {
	p := gossiptest.Start(t, gossiptest.LANConfig("a", "dc1", gossip.RoleClient))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if n, err := p.Join(ctx, []string{"127.0.0.1:1"}); n != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Join with a canceled context = %d, %v; want 0, context.Canceled", n, err)
	}
	if n, err := p.Join(t.Context(), nil); n != 0 || err != nil {
		t.Errorf("Join(nil) = %d, %v; want 0, nil", n, err)
	}
}

func TestNewBindError(t *testing.T) {
	a := gossiptest.Start(t, gossiptest.LANConfig("a", "dc1", gossip.RoleClient))
	cfg := gossiptest.LANConfig("b", "dc1", gossip.RoleClient)
	cfg.BindPort = int(a.LocalMember().Port)
	if p, err := gossip.New(cfg, nil); err == nil {
		_ = p.Shutdown()
		t.Fatal("New on a port in use: no error")
	}
}

func ExamplePool_Changes() {
	pool, err := gossip.New(gossiptest.LANConfig("web-1", "dc1", gossip.RoleClient), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Shutdown()
	<-pool.Changes() // this member's own join
	for _, m := range pool.Members() {
		fmt.Println(m.Name, m.Status, m.Role, m.Datacenter)
	}
	// Output: web-1 alive client dc1
}
