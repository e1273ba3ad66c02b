package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/internal/waittest"
)

// logLines is a slog.Handler that keeps "LEVEL message" of every record at
// Info or above, until the test ends.
type logLines struct {
	mu     sync.Mutex
	lines  []string
	closed bool
}

func (l *logLines) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.lines = append(l.lines, r.Level.String()+" "+r.Message)
	}
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// matching returns the kept lines containing s, ignoring case.
func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(strings.ToLower(line), strings.ToLower(s)) {
			out = append(out, line)
		}
	}
	return out
}

// startLogged starts an agent as agenttest.Start does, but keeps its log
// lines for the test to read.
func startLogged(t *testing.T, cfg config.Config) (*agent.Agent, *logLines) {
	t.Helper()
	lines := &logLines{}
	a, err := agent.New(cfg, slog.New(lines))
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	t.Cleanup(func() {
		lines.mu.Lock()
		lines.closed = true
		lines.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("agent.Start: %v", err)
	}
	t.Cleanup(func() { agenttest.Stop(t, a) })
	return a, lines
}

// memberWatch polls the LAN (and, for servers, WAN) members of agents and
// records every member any of them lists other than alive.
type memberWatch struct {
	mu      sync.Mutex
	seen    map[string]string
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
}

// watchMembers polls every 20ms (a member seen failed stays listed failed
// far longer) until stopMembers or the end of the test.
func watchMembers(t *testing.T, lan []*agent.Agent, wan []*agent.Agent) *memberWatch {
	t.Helper()
	w := &memberWatch{seen: map[string]string{}, stop: make(chan struct{})}
	poll := func(a *agent.Agent, wan bool) {
		c := apiClient(t, a)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var members []api.Member
			var err error
			if wan {
				members, err = c.Agent().MembersWAN(ctx)
			} else {
				members, err = c.Agent().Members(ctx)
			}
			cancel()
			for _, m := range members {
				if err == nil && m.Status != api.MemberAlive {
					w.mu.Lock()
					w.seen[m.Name] = fmt.Sprintf("%s lists %s %s (wan %v)", a.HTTPAddr(), m.Name, m.Status, wan)
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}
	for _, a := range lan {
		w.wg.Go(func() { poll(a, false) })
	}
	for _, a := range wan {
		w.wg.Go(func() { poll(a, true) })
	}
	t.Cleanup(w.stopWatching)
	return w
}

// stopWatching stops the polls and waits for them; twice is harmless.
func (w *memberWatch) stopWatching() {
	w.stopped.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// notAlive returns what the watch saw, sorted.
func (w *memberWatch) notAlive() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Values(w.seen))
}

// waitAlive waits until each agent lists exactly want alive in its LAN
// pool (wan false) or WAN pool.
func waitAlive(t *testing.T, agents []*agent.Agent, wan bool, want ...string) {
	t.Helper()
	slices.Sort(want)
	waittest.For(t, 30*time.Second, fmt.Sprintf("%d members alive (wan %v)", len(want), wan), func() error {
		for _, a := range agents {
			list := apiClient(t, a).Agent().Members
			if wan {
				list = apiClient(t, a).Agent().MembersWAN
			}
			members, err := list(context.Background())
			if err != nil {
				return err
			}
			var alive []string
			for _, m := range members {
				if m.Status == api.MemberAlive {
					alive = append(alive, m.Name)
				}
			}
			slices.Sort(alive)
			if !slices.Equal(alive, want) {
				return fmt.Errorf("%s lists %v alive, want %v", a.HTTPAddr(), alive, want)
			}
		}
		return nil
	})
}

// pool is what a keyring list should say of one pool.
type pool struct {
	keys, primary map[string]int
	nodes         int
}

// wantKeyring checks a's keyring list: the WAN pool (servers) then the
// LAN pool of dc.
func wantKeyring(t *testing.T, step string, a *agent.Agent, dc string, want ...pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := apiClient(t, a).Operator().KeyringList(ctx, false)
	if err != nil {
		t.Fatalf("%s: list: %v", step, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d pools listed, want %d", step, len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if r.WAN != (i == 0 && len(want) == 2) || r.Datacenter != dc || !maps.Equal(r.Keys, w.keys) ||
			!maps.Equal(r.PrimaryKeys, w.primary) || r.NumNodes != w.nodes || len(r.Messages) != 0 {
			t.Errorf("%s: %s lists %+v; want keys %v, primary %v on %d nodes", step, a.HTTPAddr(), r, w.keys, w.primary, w.nodes)
		}
	}
}

// TestKeyringRotation rotates the gossip key of a running cluster — dc1's
// three servers and two clients, and a server of dc2 met over the WAN —
// through the HTTP API: install a new key, use it, remove the old, on the
// LAN and WAN pools, with no member ever seen failed or left. An agent
// with only the old key then cannot join, and the agent it knocks on logs
// it a bounded number of times.
func TestKeyringRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.NewKey(t), gossiptest.NewKey(t)
	dc1 := agenttest.DatacenterConfigs(t, "dc1", 3)
	dc2 := agenttest.DatacenterConfigs(t, "dc2", 1)
	dc2[0].JoinWAN = []string{agenttest.WANAddr(dc1[0])}
	c1cfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(dc1[0]))
	c2cfg := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(dc1[1]))
	for _, cfg := range []*config.Config{&dc1[0], &dc1[1], &dc1[2], &dc2[0], &c1cfg, &c2cfg} {
		cfg.EncryptKey = oldKey
	}
	servers := agenttest.StartConfigs(t, dc1).Agents
	c1 := agenttest.Start(t, c1cfg)
	c2, c2log := startLogged(t, c2cfg)
	dc2srv := agenttest.Start(t, dc2[0])
	lan := append(slices.Clone(servers), c1, c2)
	wan := append(slices.Clone(servers), dc2srv)
	waitAlive(t, lan, false, "s1", "s2", "s3", "c1", "c2")
	waitAlive(t, wan, true, "s1.dc1", "s2.dc1", "s3.dc1", "s1.dc2")
	watch := watchMembers(t, append(slices.Clone(lan), dc2srv), wan)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op1, op2 := apiClient(t, servers[0]).Operator(), apiClient(t, dc2srv).Operator()
	both := map[string]int{oldKey: 1, newKey: 1}
	times := func(m map[string]int, n int) map[string]int {
		out := map[string]int{}
		for k, v := range m {
			out[k] = v * n
		}
		return out
	}
	only := func(k string) map[string]int { return map[string]int{k: 1} }
	wantKeyring(t, "before", servers[0], "dc1", pool{times(only(oldKey), 4), times(only(oldKey), 4), 4}, pool{times(only(oldKey), 5), times(only(oldKey), 5), 5})

	// Each step on dc1's server (the WAN pool and dc1's LAN pool), then on
	// dc2's (its LAN pool; the WAN pool has it already).
	steps := []struct {
		name          string
		do1, do2      func(context.Context, string) error
		key           string
		keys, primary map[string]int
	}{
		{"install", op1.KeyringInstall, op2.KeyringInstall, newKey, both, only(oldKey)},
		{"use", op1.KeyringUse, op2.KeyringUse, newKey, both, only(newKey)},
		{"remove", op1.KeyringRemove, op2.KeyringRemove, oldKey, only(newKey), only(newKey)},
	}
	for _, st := range steps {
		if err := st.do1(ctx, st.key); err != nil {
			t.Fatalf("%s on dc1: %v", st.name, err)
		}
		wantKeyring(t, st.name+" on dc1", servers[0], "dc1",
			pool{times(st.keys, 4), times(st.primary, 4), 4}, pool{times(st.keys, 5), times(st.primary, 5), 5})
		if err := st.do2(ctx, st.key); err != nil {
			t.Fatalf("%s on dc2: %v", st.name, err)
		}
		wantKeyring(t, st.name+" on dc2", dc2srv, "dc2",
			pool{times(st.keys, 4), times(st.primary, 4), 4}, pool{st.keys, st.primary, 1})
	}

	// Refusals: the primary key cannot go, a bad key is named.
	var se *api.StatusError
	if err := op1.KeyringRemove(ctx, newKey); !errors.As(err, &se) || se.Code != 400 || se.Field != "Key" {
		t.Errorf("removing the primary key: got %v, want a 400 naming Key", err)
	}
	if err := op1.KeyringInstall(ctx, "MDEyMzQ1Njc4OQ=="); !errors.As(err, &se) || se.Code != 400 || se.Field != "Key" {
		t.Errorf("installing a 10-byte key: got %v, want a 400 naming Key", err)
	}
	local, err := apiClient(t, c1).Operator().KeyringList(ctx, true)
	if err != nil || len(local) != 1 || local[0].WAN || local[0].NumNodes != 5 || local[0].Keys[newKey] != 5 {
		t.Errorf("client's local-only list: %+v, %v; want dc1's LAN pool with the new key on 5", local, err)
	}

	waitAlive(t, lan, false, "s1", "s2", "s3", "c1", "c2")
	waitAlive(t, wan, true, "s1.dc1", "s2.dc1", "s3.dc1", "s1.dc2")
	watch.stopWatching()
	if bad := watch.notAlive(); len(bad) > 0 {
		t.Errorf("members were seen not alive during the rotation:\n%s", strings.Join(bad, "\n"))
	}
	for i, cfg := range []config.Config{dc1[0], c2cfg} {
		path := filepath.Join(cfg.DataDir, "gossip", "lan.keyring")
		if got := readKeyringFile(t, path); !slices.Equal(got, []string{newKey}) {
			t.Errorf("agent %d: %s holds %v, want the new key only", i, path, got)
		}
	}

	// An agent with only the old key knocks on c2 again and again.
	staleCfg := agenttest.ClientConfig(t, "stale", agenttest.GossipAddr(c2cfg))
	staleCfg.EncryptKey = oldKey
	stale, staleLog := startLogged(t, staleCfg)
	const attempts = 15
	waittest.For(t, 30*time.Second, fmt.Sprintf("%d join attempts of the stale agent", attempts), func() error {
		if n := len(staleLog.matching("join failed")); n < attempts {
			return fmt.Errorf("%d attempts so far", n)
		}
		return nil
	})
	waitAlive(t, []*agent.Agent{c2, servers[0]}, false, "s1", "s2", "s3", "c1", "c2")
	waitAlive(t, []*agent.Agent{stale}, false, "stale")
	if got := c2log.matching("decrypt"); len(got) == 0 || len(got) > 3 {
		t.Errorf("%d join attempts with the old key made c2 log %d lines about decrypting, want 1 to 3:\n%s",
			attempts, len(got), strings.Join(got, "\n"))
	}
}

func readKeyringFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return keys
}

// TestKeyringRestart: an agent restarted with its data dir comes back with
// the rotated keyring although its configuration still names the old key,
// and rejoins; a server keeps its WAN keyring too.
func TestKeyringRestart(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.NewKey(t), gossiptest.NewKey(t)
	srvCfg := agenttest.ServerConfig(t, "s1", 1)
	srvCfg.EncryptKey = oldKey
	cliCfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(srvCfg))
	cliCfg.EncryptKey = oldKey
	srv := agenttest.Start(t, srvCfg)
	cli := agenttest.Start(t, cliCfg)
	waitAlive(t, []*agent.Agent{srv, cli}, false, "s1", "c1")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op := apiClient(t, srv).Operator()
	for _, step := range []func() error{
		func() error { return op.KeyringInstall(ctx, newKey) },
		func() error { return op.KeyringUse(ctx, newKey) },
		func() error { return op.KeyringRemove(ctx, oldKey) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	agenttest.Stop(t, cli)
	cli = agenttest.Start(t, cliCfg) // cliCfg.EncryptKey is still the old key
	waitAlive(t, []*agent.Agent{srv, cli}, false, "s1", "c1")
	only := map[string]int{newKey: 2}
	wantKeyring(t, "client after its restart", cli, "dc1", pool{only, only, 2})
	wantKeyring(t, "server", srv, "dc1", pool{map[string]int{newKey: 1}, map[string]int{newKey: 1}, 1}, pool{only, only, 2})
	if got := readKeyringFile(t, filepath.Join(srvCfg.DataDir, "gossip", "wan.keyring")); !slices.Equal(got, []string{newKey}) {
		t.Errorf("server's WAN keyring file holds %v, want the new key only", got)
	}
}
