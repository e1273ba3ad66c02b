// Package gossiptest helps tests run real gossip pools on loopback: fast
// timers, configs on 127.0.0.1 with free ports, pools shut down at the end of
// the test, and waiting for a condition with a deadline.
package gossiptest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/waittest"
)

// FastTiming returns memberlist timers for tests on loopback: a member that
// stops answering is declared failed in about a second, failed members are
// retried every 200ms, and failed or left members are kept 10s, longer
// than any test waits.
func FastTiming() gossip.Timing {
	return gossip.Timing{
		ProbeInterval:           100 * time.Millisecond,
		ProbeTimeout:            50 * time.Millisecond,
		SuspicionMult:           3,
		SuspicionMaxTimeoutMult: 2,
		GossipInterval:          20 * time.Millisecond,
		GossipNodes:             3,
		GossipToTheDead:         10 * time.Second,
		PushPullInterval:        time.Second,
		RetransmitMult:          3,
		IndirectChecks:          2,
		TCPTimeout:              time.Second,
		ReconnectInterval:       200 * time.Millisecond,
	}
}

// LANConfig returns a LAN config for node in dc on 127.0.0.1 with a free
// port and FastTiming. A server gets an RPC address on 127.0.0.1 (nothing
// listens there; gossip only carries it).
func LANConfig(node, dc string, role gossip.Role) gossip.Config {
	cfg := gossip.DefaultLANConfig()
	fill(&cfg, node, dc, role)
	return cfg
}

// WANConfig returns a WAN config for server node in dc, like LANConfig.
func WANConfig(node, dc string) gossip.Config {
	cfg := gossip.DefaultWANConfig()
	fill(&cfg, node, dc, gossip.RoleServer)
	return cfg
}

func fill(cfg *gossip.Config, node, dc string, role gossip.Role) {
	cfg.NodeName, cfg.Datacenter, cfg.Role = node, dc, role
	cfg.BindAddr, cfg.BindPort = "127.0.0.1", 0
	cfg.Timing = FastTiming()
	cfg.RetainDead = cfg.Timing.GossipToTheDead
	if role == gossip.RoleServer {
		cfg.RPCAddr = RPCAddr(node)
	}
}

// RPCAddr is the RPC address LANConfig and WANConfig give a server node.
func RPCAddr(node string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(node); i++ {
		h = (h ^ uint32(node[i])) * 16777619
	}
	return "127.0.0.1:" + strconv.Itoa(20000+int(h%20000))
}

// Logger returns a logger for pools under test: stderr at debug level when
// CAIRN_TEST_LOG is set, else nothing. It never writes through t, since
// memberlist may log after a test returns.
func Logger() *slog.Logger {
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Start creates a pool from cfg and shuts it down when the test ends.
func Start(t testing.TB, cfg gossip.Config) *gossip.Pool {
	t.Helper()
	p, err := gossip.New(cfg, Logger())
	if err != nil {
		t.Fatalf("gossip.New(%s): %v", cfg.NodeName, err)
	}
	t.Cleanup(func() {
		if err := p.Shutdown(); err != nil {
			t.Errorf("Shutdown %s: %v", cfg.NodeName, err)
		}
	})
	return p
}

// Addr is the host:port to join p at.
func Addr(p *gossip.Pool) string {
	m := p.LocalMember()
	return fmt.Sprintf("%s:%d", m.Addr, m.Port)
}

// Join joins p to each of others and fails the test unless all answer.
func Join(t testing.TB, p *gossip.Pool, others ...*gossip.Pool) {
	t.Helper()
	addrs := make([]string, len(others))
	for i, o := range others {
		addrs[i] = Addr(o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := p.Join(ctx, addrs)
	if err != nil || n != len(addrs) {
		t.Fatalf("Join(%v) = %d, %v; want %d, nil", addrs, n, err, len(addrs))
	}
}

// WaitFor polls cond until it returns nil, and fails the test with
// cond's last error if that takes longer than timeout.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	waittest.For(t, timeout, "gossip", cond)
}

// Status returns the status p sees for the member named name, or 0 if p
// does not know it.
func Status(p *gossip.Pool, name string) gossip.Status {
	for _, m := range p.Members() {
		if m.Name == name {
			return m.Status
		}
	}
	return 0
}

// WaitStatus waits until every pool in ps sees the member named name with
// status want.
func WaitStatus(t testing.TB, timeout time.Duration, name string, want gossip.Status, ps ...*gossip.Pool) {
	t.Helper()
	WaitFor(t, timeout, func() error {
		for _, p := range ps {
			if got := Status(p, name); got != want {
				return fmt.Errorf("%s sees %s as %v, want %v", p.LocalMember().Name, name, got, want)
			}
		}
		return nil
	})
}

// NewKey returns a fresh random 32-byte gossip key in base64, as "cairn
// keygen" prints one.
func NewKey(t testing.TB) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(RawKey(t))
}

// RawKey returns a fresh random 32-byte gossip key, for Config.EncryptKey.
func RawKey(t testing.TB) []byte {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return key
}

// Watch records every member that any of the watched pools sees other
// than alive, from their Changes signals: a test that must not make any
// member fail or leave checks NotAlive at its end. It consumes the pools'
// Changes, so nothing else may read them.
type Watch struct {
	mu       sync.Mutex
	notAlive map[string]string // member name → what some pool saw
	stop     chan struct{}
	wg       sync.WaitGroup
}

// WatchMembers starts watching pools until the test ends.
func WatchMembers(t testing.TB, pools ...*gossip.Pool) *Watch {
	t.Helper()
	w := &Watch{notAlive: make(map[string]string), stop: make(chan struct{})}
	for _, p := range pools {
		w.wg.Go(func() { w.watch(p) })
	}
	t.Cleanup(func() {
		close(w.stop)
		w.wg.Wait()
	})
	return w
}

func (w *Watch) watch(p *gossip.Pool) {
	changes := p.Changes()
	for {
		w.check(p)
		select {
		case <-w.stop:
			return
		case <-changes:
		}
	}
}

func (w *Watch) check(p *gossip.Pool) {
	self := p.LocalMember().Name
	for _, m := range p.Members() {
		if m.Status != gossip.StatusAlive {
			w.mu.Lock()
			w.notAlive[m.Name] = fmt.Sprintf("%s saw %s %v", self, m.Name, m.Status)
			w.mu.Unlock()
		}
	}
}

// NotAlive returns, sorted, what the pools saw of members that were not
// alive at some point since the watch started; nil when none was.
func (w *Watch) NotAlive() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, what := range w.notAlive {
		out = append(out, what)
	}
	slices.Sort(out)
	return out
}
