package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip/gossiptest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
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
	waitAliveAs(t, "", agents, wan, want...)
}

// waitAliveAs is waitAlive asking with token.
func waitAliveAs(t *testing.T, token string, agents []*agent.Agent, wan bool, want ...string) {
	t.Helper()
	slices.Sort(want)
	waittest.For(t, 30*time.Second, fmt.Sprintf("%d members alive (wan %v)", len(want), wan), func() error {
		for _, a := range agents {
			c, err := api.NewClient(api.Config{Address: a.HTTPAddr().String(), Token: token})
			if err != nil {
				return err
			}
			list := c.Agent().Members
			if wan {
				list = c.Agent().MembersWAN
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

// pool is what a keyring list (or change) should say of one pool.
type pool struct {
	wan           bool
	dc            string
	keys, primary map[string]int
	nodes         int
}

// times multiplies each count of m by n.
func times(m map[string]int, n int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = v * n
	}
	return out
}

// wantPools checks that got says what want does of each pool, in order,
// with no member at fault.
func wantPools(t *testing.T, step string, got []*api.KeyringResponse, want ...pool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d pools, want %d: %s", step, len(got), len(want), describePools(got))
	}
	for i, r := range got {
		w := want[i]
		if r.WAN != w.wan || r.Datacenter != w.dc || !maps.Equal(r.Keys, w.keys) || !maps.Equal(r.PrimaryKeys, w.primary) ||
			r.NumNodes != w.nodes || r.NumErrs != 0 || r.Error != "" || len(r.Messages) != 0 {
			t.Errorf("%s: pool %d is %+v; want WAN %v in %s, keys %v, primary %v on %d nodes, no errors",
				step, i, *r, w.wan, w.dc, w.keys, w.primary, w.nodes)
		}
	}
}

func describePools(rs []*api.KeyringResponse) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %+v", *r)
	}
	return b.String()
}

// wantKeyring checks a's keyring list against want.
func wantKeyring(t *testing.T, step string, a *agent.Agent, want ...pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := apiClient(t, a).Operator().KeyringList(ctx, false)
	if err != nil {
		t.Fatalf("%s: list from %s: %v", step, a.HTTPAddr(), err)
	}
	wantPools(t, step+": list from "+a.HTTPAddr().String(), got, want...)
}

// TestKeyringRotationThroughAClient rotates the gossip key of two
// datacenters through the HTTP API of one client agent of dc1: install a
// new key, use it, remove the old. Each step reaches every pool the key is
// in (the WAN pool, dc1's and dc2's LAN pools), reports each, and no
// member is ever seen failed or left. Then an agent with only the old key
// joins neither LAN pool nor the WAN pool, and the agent it knocks on
// logs it a bounded number of times.
func TestKeyringRotationThroughAClient(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.NewKey(t), gossiptest.NewKey(t)
	dc1 := agenttest.DatacenterConfigs(t, "dc1", 1)
	dc2 := agenttest.DatacenterConfigs(t, "dc2", 1)
	dc2[0].JoinWAN = []string{agenttest.WANAddr(dc1[0])}
	c1cfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(dc1[0]))
	c2cfg := agenttest.ClientConfig(t, "c2", agenttest.GossipAddr(dc1[0]))
	d1cfg := agenttest.ClientConfig(t, "d1", agenttest.GossipAddr(dc2[0]))
	d1cfg.Datacenter = "dc2"
	for _, cfg := range []*config.Config{&dc1[0], &dc2[0], &c1cfg, &c2cfg, &d1cfg} {
		cfg.EncryptKey = oldKey
	}
	s1 := agenttest.Start(t, dc1[0])
	c1 := agenttest.Start(t, c1cfg)
	c2, c2log := startLogged(t, c2cfg)
	s2 := agenttest.Start(t, dc2[0])
	d1 := agenttest.Start(t, d1cfg)
	lan1, lan2, wan := []*agent.Agent{s1, c1, c2}, []*agent.Agent{s2, d1}, []*agent.Agent{s1, s2}
	waitAlive(t, lan1, false, "s1", "c1", "c2")
	waitAlive(t, lan2, false, "s1", "d1")
	waitAlive(t, wan, true, "s1.dc1", "s1.dc2")
	watch := watchMembers(t, append(slices.Clone(lan1), lan2...), wan)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	op := apiClient(t, c1).Operator()
	only := func(k string) map[string]int { return map[string]int{k: 1} }
	// The WAN pool's entry names the datacenter of the server that ran
	// it: the asking agent's.
	everywhere := func(wanDC string, keys, primary map[string]int) []pool {
		return []pool{
			{true, wanDC, times(keys, 2), times(primary, 2), 2},
			{false, "dc1", times(keys, 3), times(primary, 3), 3},
			{false, "dc2", times(keys, 2), times(primary, 2), 2},
		}
	}
	wantKeyring(t, "before", d1, everywhere("dc2", only(oldKey), only(oldKey))...)

	both := map[string]int{oldKey: 1, newKey: 1}
	for _, st := range []struct {
		name          string
		do            func(context.Context, string) ([]*api.KeyringResponse, error)
		key           string
		keys, primary map[string]int
	}{
		{"install", op.KeyringInstall, newKey, both, only(oldKey)},
		{"use", op.KeyringUse, newKey, both, only(newKey)},
		{"remove", op.KeyringRemove, oldKey, only(newKey), only(newKey)},
	} {
		got, err := st.do(ctx, st.key)
		if err != nil {
			t.Fatalf("%s through client c1: %v", st.name, err)
		}
		wantPools(t, st.name+" through client c1", got, everywhere("dc1", st.keys, st.primary)...)
		wantKeyring(t, st.name, d1, everywhere("dc2", st.keys, st.primary)...)
	}

	// Refusals: the primary key cannot go, a bad key is named.
	var se *api.StatusError
	if _, err := op.KeyringRemove(ctx, newKey); !errors.As(err, &se) || se.Code != 400 || se.Field != "Key" {
		t.Errorf("removing the primary key: got %v, want a 400 naming Key", err)
	}
	if _, err := op.KeyringInstall(ctx, "MDEyMzQ1Njc4OQ=="); !errors.As(err, &se) || se.Code != 400 || se.Field != "Key" {
		t.Errorf("installing a 10-byte key: got %v, want a 400 naming Key", err)
	}
	local, err := apiClient(t, c1).Operator().KeyringList(ctx, true)
	if err != nil || len(local) != 1 || local[0].WAN || local[0].NumNodes != 3 || local[0].Keys[newKey] != 3 {
		t.Errorf("client's local-only list: %+v, %v; want dc1's LAN pool with the new key on 3", local, err)
	}

	waitAlive(t, lan1, false, "s1", "c1", "c2")
	waitAlive(t, lan2, false, "s1", "d1")
	waitAlive(t, wan, true, "s1.dc1", "s1.dc2")
	watch.stopWatching()
	if bad := watch.notAlive(); len(bad) > 0 {
		t.Errorf("members were seen not alive during the rotation:\n%s", strings.Join(bad, "\n"))
	}
	for _, file := range []string{
		filepath.Join(c2cfg.DataDir, "gossip", "lan.keyring"),
		filepath.Join(d1cfg.DataDir, "gossip", "lan.keyring"),
		filepath.Join(dc2[0].DataDir, "gossip", "wan.keyring"),
	} {
		if got := readKeyringFile(t, file); !slices.Equal(got, []string{newKey}) {
			t.Errorf("%s holds %v, want the new key only", file, got)
		}
	}

	// An attacker's server with only the old key cannot join the WAN pool.
	rogueCfg := agenttest.ServerConfig(t, "rogue", 1)
	rogueCfg.Datacenter = "dc3"
	rogueCfg.BindAddr, rogueCfg.AdvertiseAddr = "127.0.0.66", "127.0.0.66"
	rogueCfg.EncryptKey = oldKey
	rogue := agenttest.Start(t, rogueCfg)
	if code, body := call(t, rogue, "", "PUT", "/v1/agent/join/"+agenttest.WANAddr(dc1[0])+"?wan=1", nil); code == http.StatusOK {
		t.Errorf("a server with the removed key joined the WAN pool: %s", body)
	}

	// An agent with only the old key knocks on c2 again and again, and
	// cannot join dc2's LAN pool either.
	staleCfg := agenttest.ClientConfig(t, "stale", agenttest.GossipAddr(c2cfg))
	staleCfg.BindAddr, staleCfg.AdvertiseAddr = "127.0.0.67", "127.0.0.67"
	staleCfg.EncryptKey = oldKey
	stale, staleLog := startLogged(t, staleCfg)
	if code, body := call(t, stale, "", "PUT", "/v1/agent/join/"+agenttest.GossipAddr(dc2[0]), nil); code == http.StatusOK {
		t.Errorf("an agent with the removed key joined dc2's LAN pool: %s", body)
	}
	const attempts = 15
	waittest.For(t, 30*time.Second, fmt.Sprintf("%d join attempts of the stale agent", attempts), func() error {
		if n := len(staleLog.matching("join failed")); n < attempts {
			return fmt.Errorf("%d attempts so far", n)
		}
		return nil
	})
	waitAlive(t, lan1, false, "s1", "c1", "c2")
	waitAlive(t, lan2, false, "s1", "d1")
	waitAlive(t, wan, true, "s1.dc1", "s1.dc2")
	waitAlive(t, []*agent.Agent{stale}, false, "stale")
	if got := c2log.matching("decrypt"); len(got) == 0 || len(got) > 3 {
		t.Errorf("%d join attempts with the old key made c2 log %d lines about decrypting, want 1 to 3:\n%s",
			attempts, len(got), strings.Join(got, "\n"))
	}
}

// TestKeyringRefusalChangesNoPool: under default deny, a keyring change
// with no token or a token that may only read the keyring is refused,
// through a client agent and sent straight to the server's RPC port, and
// no pool holds the key afterwards.
func TestKeyringRefusalChangesNoPool(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.NewKey(t), gossiptest.NewKey(t)
	scfg := aclServerConfig(t, "s1")
	scfg.EncryptKey = oldKey
	ccfg := agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg))
	ccfg.EncryptKey = oldKey
	ccfg.ACL.Enabled, ccfg.ACL.DefaultPolicy, ccfg.ACL.Tokens.Agent = true, "deny", mgmtSecret
	s := agenttest.Start(t, scfg)
	waitManagement(t, s)
	c := agenttest.Start(t, ccfg)
	waitAliveAs(t, mgmtSecret, []*agent.Agent{s, c}, false, "s1", "c1")
	readToken := makeToken(t, s, "keyring-read", `keyring = "read"`)
	rpcPool := rpctest.NewPool(t)
	server := net.JoinHostPort("127.0.0.1", strconv.Itoa(scfg.Ports.Server))

	for _, tok := range []struct{ name, secret string }{{"no token", ""}, {"a keyring read token", readToken}} {
		for _, method := range []string{"POST", "PUT", "DELETE"} {
			if code, body := call(t, c, tok.secret, method, "/v1/operator/keyring", map[string]string{"Key": newKey}); code != http.StatusForbidden {
				t.Errorf("%s %s through the client: got %d %s, want 403", tok.name, method, code, body)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		args := &rpc.KeyringRequest{WriteRequest: rpc.WriteRequest{Token: tok.secret}, Op: rpc.KeyringInstall, Key: newKey}
		err := rpcPool.Call(ctx, server, rpc.MethodKeyringOperation, args, &rpc.KeyringResponses{})
		cancel()
		if !errors.Is(err, rpc.ErrPermissionDenied) {
			t.Errorf("%s straight to the server: got %v, want permission denied", tok.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// With a token that may, the server still parses before it acts.
	for _, bad := range []struct{ op, key, field string }{{"rotate", newKey, "Op"}, {"install", "MDEyMzQ1Njc4OQ==", "Key"}} {
		args := &rpc.KeyringRequest{WriteRequest: rpc.WriteRequest{Token: mgmtSecret}, Op: rpc.KeyringOp(bad.op), Key: bad.key}
		err := rpcPool.Call(ctx, server, rpc.MethodKeyringOperation, args, &rpc.KeyringResponses{})
		if fe, ok := errors.AsType[*catalog.FieldError](err); !ok || fe.Field != bad.field {
			t.Errorf("%s %s straight to the server: got %v, want a field error naming %s", bad.op, bad.key, err, bad.field)
		}
	}
	only := map[string]int{oldKey: 1}
	want := []pool{{true, "dc1", only, only, 1}, {false, "dc1", times(only, 2), times(only, 2), 2}}
	got, err := apiClient(t, c).Operator().KeyringList(ctx, false)
	if err == nil {
		t.Errorf("an anonymous list: got %s, want it refused", describePools(got))
	}
	var listed []*api.KeyringResponse
	mustCall(t, c, readToken, "GET", "/v1/operator/keyring", nil, &listed)
	wantPools(t, "after the refusals", listed, want...)
	for _, file := range []string{
		filepath.Join(scfg.DataDir, "gossip", "lan.keyring"),
		filepath.Join(scfg.DataDir, "gossip", "wan.keyring"),
		filepath.Join(ccfg.DataDir, "gossip", "lan.keyring"),
	} {
		if got := readKeyringFile(t, file); !slices.Equal(got, []string{oldKey}) {
			t.Errorf("%s holds %v after the refusals, want the old key only", file, got)
		}
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
	for _, step := range []func(context.Context, string) ([]*api.KeyringResponse, error){op.KeyringInstall, op.KeyringUse} {
		if _, err := step(ctx, newKey); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := op.KeyringRemove(ctx, oldKey); err != nil {
		t.Fatal(err)
	}
	agenttest.Stop(t, cli)
	cli = agenttest.Start(t, cliCfg) // cliCfg.EncryptKey is still the old key
	waitAlive(t, []*agent.Agent{srv, cli}, false, "s1", "c1")
	only := map[string]int{newKey: 1}
	want := []pool{{true, "dc1", only, only, 1}, {false, "dc1", times(only, 2), times(only, 2), 2}}
	wantKeyring(t, "client after its restart", cli, want...)
	wantKeyring(t, "server", srv, want...)
	if got := readKeyringFile(t, filepath.Join(srvCfg.DataDir, "gossip", "wan.keyring")); !slices.Equal(got, []string{newKey}) {
		t.Errorf("server's WAN keyring file holds %v, want the new key only", got)
	}
}

// TestKeyringRefusedInAnotherDatacenterChangesNoPool: each datacenter
// holds its own tokens, so a change made with a token dc1 knows and dc2
// does not is refused by dc2, and then no pool changes, dc1's and the
// WAN pool included.
func TestKeyringRefusedInAnotherDatacenterChangesNoPool(t *testing.T) {
	t.Parallel()
	oldKey, newKey := gossiptest.NewKey(t), gossiptest.NewKey(t)
	s1cfg, s2cfg := aclServerConfig(t, "s1"), aclServerConfig(t, "s1")
	s2cfg.Datacenter = "dc2"
	s2cfg.JoinWAN = []string{agenttest.WANAddr(s1cfg)}
	s1cfg.EncryptKey, s2cfg.EncryptKey = oldKey, oldKey
	s1, s2 := agenttest.Start(t, s1cfg), agenttest.Start(t, s2cfg)
	waitManagement(t, s1)
	waitManagement(t, s2)
	waitAliveAs(t, mgmtSecret, []*agent.Agent{s1, s2}, true, "s1.dc1", "s1.dc2")
	dc1Only := makeToken(t, s1, "keyring-writer", `keyring = "write"`)

	code, body := call(t, s1, dc1Only, "POST", "/v1/operator/keyring", map[string]string{"Key": newKey})
	if code != http.StatusForbidden {
		t.Errorf("install with a token dc2 does not know: got %d %s, want 403", code, body)
	}
	var listed []*api.KeyringResponse
	mustCall(t, s1, mgmtSecret, "GET", "/v1/operator/keyring", nil, &listed)
	only := map[string]int{oldKey: 1}
	wantPools(t, "after the refusal", listed,
		pool{true, "dc1", times(only, 2), times(only, 2), 2}, pool{false, "dc1", only, only, 1}, pool{false, "dc2", only, only, 1})
}
