package gossip_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// cut is a network partition among pools on loopback that the test switches
// on and off: while on, nothing passes between the isolated pools and the
// others, either way. Each pool's transport drops what it would send
// across (datagrams vanish, dials fail), which cuts both directions since
// every pool of the test sends through one.
type cut struct {
	mu       sync.Mutex
	isolated map[string]bool // "host:port" → on the far side
	lastDrop time.Time       // when a datagram was last dropped
}

func (c *cut) isolate(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.isolated = map[string]bool{addr: true}
}

func (c *cut) heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.isolated = nil
}

// blocks reports whether from may not send to to, and notes a datagram
// dropped when it may not.
func (c *cut) blocks(from, to string, datagram bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	blocked := c.isolated[from] != c.isolated[to]
	if blocked && datagram {
		c.lastDrop = time.Now()
	}
	return blocked
}

// quietFor reports whether no datagram has been dropped for d.
func (c *cut) quietFor(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if since := time.Since(c.lastDrop); since < d {
		return fmt.Errorf("a datagram was dropped %s ago", since)
	}
	return nil
}

// cutTransport is memberlist's own transport, sending only where the cut
// lets it.
type cutTransport struct {
	*memberlist.NetTransport
	cut  *cut
	self string // "host:port" this transport is bound to
}

var _ memberlist.NodeAwareTransport = (*cutTransport)(nil)

func (t *cutTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.cut.blocks(t.self, addr, true) {
		return time.Now(), nil // lost on the way, as UDP may be
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *cutTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.cut.blocks(t.self, a.Addr, true) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteToAddress(b, a)
}

func (t *cutTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.cut.blocks(t.self, addr, false) {
		return nil, fmt.Errorf("dial %s: cut off by the test", addr)
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *cutTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.cut.blocks(t.self, a.Addr, false) {
		return nil, fmt.Errorf("dial %s: cut off by the test", a.Addr)
	}
	return t.NetTransport.DialAddressTimeout(a, timeout)
}

// startCut starts a LAN client pool named node that sends through c, with
// periodic push/pull off: after a partition, only a reconnect can bring
// its members back.
func startCut(t *testing.T, c *cut, node string) *gossip.Pool {
	t.Helper()
	cfg := gossiptest.LANConfig(node, "dc1", gossip.RoleClient)
	cfg.Timing.PushPullInterval = 0
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{cfg.BindAddr},
		BindPort:  cfg.BindPort,
		Logger:    log.New(io.Discard, "", 0),
	})
	if err != nil {
		t.Fatalf("transport for %s: %v", node, err)
	}
	self := net.JoinHostPort(cfg.BindAddr, strconv.Itoa(nt.GetAutoBindPort()))
	p, err := gossip.NewWithTransport(cfg, gossiptest.Logger(), &cutTransport{NetTransport: nt, cut: c, self: self})
	if err != nil {
		_ = nt.Shutdown()
		t.Fatalf("gossip.New(%s): %v", node, err)
	}
	t.Cleanup(func() {
		if err := p.Shutdown(); err != nil {
			t.Errorf("Shutdown %s: %v", node, err)
		}
	})
	return p
}

// TestReconnectHealsPartition cuts c off from a and b until each side sees
// the other failed, heals the cut, and wants all three alive everywhere
// again. memberlist never probes failed members and periodic push/pull is
// off, so only the pool's reconnect loop can do it.
func TestReconnectHealsPartition(t *testing.T) {
	var part cut
	a, b, c := startCut(t, &part, "a"), startCut(t, &part, "b"), startCut(t, &part, "c")
	gossiptest.Join(t, b, a)
	gossiptest.Join(t, c, a)
	all := []*gossip.Pool{a, b, c}
	for _, name := range []string{"a", "b", "c"} {
		gossiptest.WaitStatus(t, wait, name, gossip.StatusAlive, all...)
	}

	part.isolate(gossiptest.Addr(c))
	gossiptest.WaitStatus(t, wait, "c", gossip.StatusFailed, a, b)
	gossiptest.WaitStatus(t, wait, "a", gossip.StatusFailed, c)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusFailed, c)
	// Hold the cut until the failures are no longer gossiped across it, as
	// in a partition of some seconds: a gossip still in flight at the heal
	// would let the sides refute the failures without any reconnect.
	gossiptest.WaitFor(t, wait, func() error { return part.quietFor(10 * gossiptest.FastTiming().GossipInterval) })

	part.heal()
	healed := time.Now()
	for _, name := range []string{"a", "b", "c"} {
		gossiptest.WaitStatus(t, 5*time.Second, name, gossip.StatusAlive, all...)
	}
	t.Logf("all alive everywhere %s after the heal", time.Since(healed).Round(time.Millisecond))
}
