package upgrade

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The load's shape. Every agent (servers too: an upgrade does not stop
// the writes through them) runs one writer of each kind through its own
// HTTP API for as long as the roll lasts.
const (
	// kvPrefix holds one key per write, written with PUT /v1/kv/<key>:
	// load/<agent>/<seq>, its value unique.
	kvPrefix = "load/"
	// loadService's instances are registered with PUT
	// /v1/agent/service/register (the agent stores them and pushes them
	// to the servers, by anti-entropy after a restart), as
	// load-<agent>-<seq>; once an agent holds loadWindow of them, each
	// new one is followed by the deregistration of its oldest.
	loadService = "load"
	loadWindow  = 20

	kvPause  = 80 * time.Millisecond  // between one KV writer's writes
	regPause = 250 * time.Millisecond // between one registration writer's writes
	// failPause is the pause after a failed write (an agent being
	// restarted refuses every connection).
	failPause = 300 * time.Millisecond
	// writeTimeout outlasts the agents' rpc_hold_timeout (7s), after
	// which an agent answers a write it could not place.
	writeTimeout = 10 * time.Second
)

// load writes through every agent of a cluster and records each write an
// agent acknowledged (a 200); a write that failed or whose fate is unknown
// is counted and left out of the checks.
type load struct {
	c      *cluster
	http   *http.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	kv       map[string]string // key → acknowledged value
	live     map[string]string // instance ID → agent, registered and not deregistered (acknowledged)
	gone     map[string]string // instance ID → agent, acknowledged deregistration
	acks     map[string][]span // "<kind> <agent>" → the acknowledged writes
	acked    int
	failed   int
	failures map[string]int // the failures, by kind, agent and first line of the error
}

// span is when a write was sent and when its answer came.
type span struct{ start, end time.Time }

// startLoad starts the writers on every agent of c. Their addresses do
// not change across the roll, so they keep writing through an agent as
// soon as it is back.
func startLoad(c *cluster) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{c: c, http: &http.Client{Timeout: writeTimeout}, cancel: cancel,
		kv: map[string]string{}, live: map[string]string{}, gone: map[string]string{},
		acks: map[string][]span{}, failures: map[string]int{}}
	for _, a := range c.all {
		url := c.httpURL(a)
		l.wg.Go(func() { l.writeKV(ctx, a.name, url) })
		l.wg.Go(func() { l.register(ctx, a.name, url) })
	}
	c.t.Cleanup(l.stop)
	return l
}

// stop ends the writers and waits for them.
func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// writeKV is one agent's KV writer.
func (l *load) writeKV(ctx context.Context, name, url string) {
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("%s%s/%d", kvPrefix, name, seq)
		value := fmt.Sprintf("%s-%d-%d", name, seq, time.Now().UnixNano())
		start := time.Now()
		err := l.do(ctx, http.MethodPut, url+"/v1/kv/"+key, []byte(value), "true")
		if !l.record("kv", name, start, err) {
			pause(ctx, failPause)
			continue
		}
		l.mu.Lock()
		l.kv[key] = value
		l.mu.Unlock()
		pause(ctx, kvPause)
	}
}

// register is one agent's registration writer.
func (l *load) register(ctx context.Context, name, url string) {
	var window []string // this agent's live instances, oldest first
	for seq := 0; ctx.Err() == nil; seq++ {
		id := fmt.Sprintf("%s-%s-%d", loadService, name, seq)
		body, _ := json.Marshal(map[string]any{"ID": id, "Name": loadService, "Port": 1 + seq%60000,
			"Meta": map[string]string{"agent": name}})
		start := time.Now()
		err := l.do(ctx, http.MethodPut, url+"/v1/agent/service/register", body, "")
		if l.record("register", name, start, err) {
			l.mu.Lock()
			l.live[id] = name
			l.mu.Unlock()
			window = append(window, id)
		}
		if len(window) > loadWindow {
			old := window[0]
			start := time.Now()
			err := l.do(ctx, http.MethodPut, url+"/v1/agent/service/deregister/"+old, nil, "")
			l.mu.Lock()
			delete(l.live, old) // known gone, or of unknown fate: not checked
			l.mu.Unlock()
			window = window[1:]
			if l.record("deregister", name, start, err) {
				l.mu.Lock()
				l.gone[old] = name
				l.mu.Unlock()
			}
		}
		if err != nil {
			pause(ctx, failPause)
		} else {
			pause(ctx, regPause)
		}
	}
}

// do sends one write and returns nil when it was acknowledged: a 200
// whose body is want (when want is not "").
func (l *load) do(ctx context.Context, method, url string, body []byte, want string) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(out))
	}
	if want != "" && strings.TrimSpace(string(out)) != want {
		return fmt.Errorf("200 %q, want %q", bytes.TrimSpace(out), want)
	}
	return nil
}

// record counts the outcome of one write sent at start and reports
// whether it was acknowledged. A write cancelled by stop is not counted.
func (l *load) record(kind, name string, start time.Time, err error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.acked++
		k := kind + " " + name
		l.acks[k] = append(l.acks[k], span{start, time.Now()})
		return true
	}
	if strings.Contains(err.Error(), context.Canceled.Error()) {
		return false
	}
	l.failed++
	msg, _, _ := strings.Cut(err.Error(), "\n")
	// Connection refusals differ only by port; one count per agent.
	if strings.Contains(msg, "connection refused") {
		msg = "connection refused"
	}
	k := kind + " via " + name + ": " + msg
	l.failures[k]++
	return false
}

// ackedSince waits until every agent has had a write of each kind
// acknowledged after since: the write path works through it, across the
// version line, at this step. It returns which was the last to resume,
// when, and how long that write took.
func (l *load) ackedSince(t *testing.T, since time.Time, limit time.Duration) string {
	t.Helper()
	var last string
	err := poll(limit, 100*time.Millisecond, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		var late []string
		var lastAt time.Time
		for _, a := range l.c.all {
			for _, kind := range []string{"kv", "register"} {
				spans := l.acks[kind+" "+a.name]
				i, _ := slices.BinarySearchFunc(spans, since, func(s span, at time.Time) int { return s.end.Compare(at) })
				if i == len(spans) {
					late = append(late, kind+" via "+a.name)
					continue
				}
				if first := spans[i]; first.end.After(lastAt) {
					lastAt = first.end
					last = fmt.Sprintf("%s via %s after %v (a write of %v)", kind, a.name,
						first.end.Sub(since).Round(time.Millisecond), first.end.Sub(first.start).Round(time.Millisecond))
				}
			}
		}
		if len(late) > 0 {
			return fmt.Errorf("no write acknowledged since the step began: %s", strings.Join(late, ", "))
		}
		return nil
	})
	if err != nil {
		t.Errorf("writes did not resume through every agent: %v\n%s", err, l.summary())
	}
	return last
}

// summary describes the writes so far: how many were acknowledged, and
// the failures by agent and error.
func (l *load) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "writes: %d acknowledged, %d failed", l.acked, l.failed)
	keys := make([]string, 0, len(l.failures))
	for k := range l.failures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %5d × %s", l.failures[k], k)
	}
	return b.String()
}

// verify stops the writers and checks that every acknowledged write is in
// the catalog as read with ?consistent: each KV value, each registered
// instance not deregistered since, and no deregistered one. Registrations
// reach the catalog by anti-entropy after a restart, so it waits up to
// limit for them. Then each server's own state (read from it with
// ?stale) must come to hold them too: a server that skipped entries it
// could not read (a command type its release does not know) would serve
// reads and change feeds without them.
func (l *load) verify(t *testing.T, limit time.Duration) {
	t.Helper()
	l.stop()
	c := l.c
	if err := poll(limit, time.Second, func() error { return l.holds(c.servers[0], "consistent", l.kv, l.live, l.gone) }); err != nil {
		t.Errorf("acknowledged writes lost: %v", err)
	}
	for _, s := range c.servers {
		if err := poll(limit, time.Second, func() error { return l.holds(s, "stale", l.kv, l.live, l.gone) }); err != nil {
			t.Errorf("server %s (on %s)'s own state lacks acknowledged writes%s: %v", s.name, s.rel.name, divergenceHint(s), err)
		}
	}
	t.Logf("load: %d KV values, %d live and %d deregistered instances checked; %s", len(l.kv), len(l.live), len(l.gone), l.summary())
}

// serversHold checks, while the writers run, that every server's own
// state (read from it with ?stale) comes to hold every KV value
// acknowledged so far, within limit: a server that skips entries it
// cannot read diverges from the others at once. (Registrations are left
// to verify: a later deregistration may rightly remove one.)
func (l *load) serversHold(t *testing.T, what string, limit time.Duration) {
	t.Helper()
	l.mu.Lock()
	kv := maps.Clone(l.kv)
	l.mu.Unlock()
	for _, s := range l.c.servers {
		if err := poll(limit, 500*time.Millisecond, func() error { return l.holds(s, "stale", kv, nil, nil) }); err != nil {
			t.Errorf("%s: server %s (on %s)'s own state lacks acknowledged writes%s: %v", what, s.name, s.rel.name, divergenceHint(s), err)
		}
	}
}

// divergenceHint says what most likely makes a server on a release other
// than HEAD's diverge, for the failure message.
func divergenceHint(s *agent) string {
	if s.rel.name == "HEAD" {
		return ""
	}
	return " (a server on " + s.rel.name + " skips, silently, every Raft log entry of a command type it does not know: " +
		"HEAD must not write such entries while a server of the previous release may read them, rollback included)"
}

// holds reports whether the state read through a with the consistency
// mode ("consistent", "stale") has the KV values kv, the instances live
// (ID → node) and none of the instances gone.
func (l *load) holds(a *agent, mode string, kv, live, gone map[string]string) error {
	c := l.c
	var entries []struct{ Key, Value string }
	if err := c.get(a, "/v1/kv/"+kvPrefix+"?recurse&"+mode, &entries); err != nil {
		return err
	}
	got := make(map[string]string, len(entries))
	for _, e := range entries {
		v, err := base64.StdEncoding.DecodeString(e.Value)
		if err != nil {
			return fmt.Errorf("key %s: value %q: %w", e.Key, e.Value, err)
		}
		got[e.Key] = string(v)
	}
	var problems []string
	for k, v := range kv {
		if got[k] != v {
			problems = append(problems, fmt.Sprintf("KV %s = %q missing (have %q)", k, v, got[k]))
		}
	}
	if len(problems) > 0 || live == nil && gone == nil {
		return problemsErr(problems, kv, live, gone)
	}
	var instances []struct{ ServiceID, Node string }
	if err := c.get(a, "/v1/catalog/service/"+loadService+"?"+mode, &instances); err != nil {
		return err
	}
	registered := make(map[string]string, len(instances))
	for _, in := range instances {
		registered[in.ServiceID] = in.Node
	}
	for id, node := range live {
		if registered[id] != node {
			problems = append(problems, fmt.Sprintf("instance %s on %s missing", id, node))
		}
	}
	for id := range gone {
		if node, ok := registered[id]; ok {
			problems = append(problems, fmt.Sprintf("instance %s on %s deregistered but present", id, node))
		}
	}
	return problemsErr(problems, kv, live, gone)
}

// problemsErr sums up what holds found: nil for nothing, else the count
// and the first few.
func problemsErr(problems []string, kv, live, gone map[string]string) error {
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("%d problems (of %d KV values, %d live and %d deregistered instances acknowledged): %s",
		len(problems), len(kv), len(live), len(gone), strings.Join(problems[:min(10, len(problems))], "; "))
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
