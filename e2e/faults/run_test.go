package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Phases of every scenario, around its fault.
const (
	baseline     = 3 * time.Second  // load before the fault
	recovery     = 3 * time.Second  // load after the cluster settled again
	settleLimit  = 90 * time.Second // for the cluster to settle after the fault (gossip has taken 47 s)
	finalTimeout = 30 * time.Second // for the final reads to succeed
)

// run is one scenario's state, shared by the harness and the fault.
type run struct {
	t       *testing.T
	c       *cluster
	h       *history
	leader  *agent              // the leader before the fault
	target  string              // what the fault hit, for the report
	focus   *agent              // the client whose server the fault hit, if any
	uses    map[*agent][]*agent // client → the servers it had connections to before the fault
	faultAt time.Duration
	healAt  time.Duration
}

// mark records the fault's start (or its heal) on the history's clock.
func (r *run) mark(what string) time.Duration {
	at := r.h.now()
	r.t.Logf("+%v %s", at.Round(time.Millisecond), what)
	return at
}

// hold keeps the fault in place for d.
func (r *run) hold(d time.Duration) { time.Sleep(d) }

// restartEach stops each server in turn as an operator would (SIGTERM),
// starts it again and waits until the cluster has settled (restart).
func (r *run) restartEach() {
	r.t.Helper()
	for _, s := range r.c.servers {
		r.mark("SIGTERM " + s.name)
		r.c.terminate(s)
		r.restart(s)
	}
}

// restart starts the stopped server s and waits until the cluster has
// settled. A server that exits after its start (it cannot read its log,
// say) fails the test at once, with its log's tail.
func (r *run) restart(s *agent) {
	r.t.Helper()
	r.c.start(s)
	begin := time.Now()
	err := poll(settleLimit, 100*time.Millisecond, func() error {
		if !s.running() {
			return nil
		}
		return r.c.settled()
	})
	if !s.running() {
		r.t.Fatalf("%s exited after its restart (%v); its log ends:\n%s", s.name, s.exitErr, logTail(s.logPath, 30))
	}
	if err != nil {
		r.t.Fatalf("cluster not settled %v after %s restarted: %v", settleLimit, s.name, err)
	}
	r.mark(s.name + " back; settled after " + time.Since(begin).Round(time.Millisecond).String())
}

// followerServerOf picks a client and the server it uses, preferring a
// pair whose server is a follower (so that the fault hits the client's
// failover, not a leader election); it falls back to a server a client
// uses that leads, then to any follower.
func (r *run) followerServerOf() (*agent, *agent) {
	var leaderPair [2]*agent
	for _, cl := range r.c.clients {
		for _, s := range r.uses[cl] {
			if s != r.leader {
				return cl, s
			}
			if leaderPair[0] == nil {
				leaderPair = [2]*agent{cl, s}
			}
		}
	}
	if leaderPair[0] != nil {
		return leaderPair[0], leaderPair[1]
	}
	r.t.Logf("no client has a connection to a server; hitting a follower")
	for _, s := range r.c.servers {
		if s != r.leader {
			return r.c.clients[0], s
		}
	}
	return r.c.clients[0], r.c.servers[0]
}

// describe names a server with its role before the fault.
func (r *run) describe(s *agent) string {
	if s == r.leader {
		return s.name + " (leader)"
	}
	return s.name + " (follower)"
}

// runScenario starts a cluster, puts the workload, the DNS prober and the
// leader monitor on it, runs the fault, lets the cluster settle, reads the
// final state and checks the history. It logs the result and asserts the
// verdicts; when the test failed, the agents' logs and the history are
// kept (keepEvidence).
func runScenario(t *testing.T, sc scenario) *result {
	begin := time.Now()
	c := newCluster(t, sc.serverConfig, sc.clocks)
	registerStable(t, c)

	h := newHistory()
	defer func() {
		if t.Failed() {
			keepEvidence(t, sc.name, c, h)
		}
	}()
	r := &run{t: t, c: c, h: h}
	prober := startDNSProber(h, c.clients)
	monitor := startLeaderMonitor(h, c.servers)
	wl := startWorkload(h, c.clients)
	stopped := false
	stopAll := func() ([]*dnsStats, []leaderEvent) {
		stopped = true
		wl.stop()
		return prober.stop(), monitor.stop()
	}
	defer func() {
		if !stopped { // a fault that failed the test: stop the goroutines all the same
			stopAll()
		}
	}()

	time.Sleep(baseline)
	var err error
	if r.leader, err = c.leader(); err != nil {
		t.Fatalf("before the fault: %v", err)
	}
	r.uses = map[*agent][]*agent{}
	var uses []string
	for _, cl := range c.clients {
		r.uses[cl] = c.serverOf(cl)
		for _, s := range r.uses[cl] {
			uses = append(uses, cl.name+"→"+s.name)
		}
	}
	t.Logf("leader %s; clients' server connections: %s", r.leader.name, strings.Join(uses, " "))
	sc.fault(r)
	raftTook, gossipTook := settleAfterFault(t, c)
	t.Logf("+%v settled after the heal: Raft after %s, gossip after %s", h.now().Round(time.Millisecond), fmtDur(raftTook), fmtDur(gossipTook))
	time.Sleep(recovery)
	loadEnd := h.now()
	dns, events := stopAll()

	res := &result{name: sc.name, target: r.target, uses: strings.Join(uses, " "), dns: dns, events: events,
		raftSettled: raftTook, gossipSettled: gossipTook}
	res.batched, res.batches = batchedWrites(c)
	ops := h.snapshot()
	final := finalState(t, r)
	checkRegisters(&res.verdict, ops, final.kv, opWrite, opRead)
	checkRegisters(&res.verdict, ops, final.kvStore, opKVWrite, opKVRead)
	checkSet(&res.verdict, ops, final.set)
	checkAgentRegistrations(&res.verdict, ops, final.agentSvcs)
	res.verdict.diverged = final.diverged
	res.measure(r, ops, loadEnd)
	res.targets = sc.targets(r, res)
	res.took = time.Since(begin)
	res.log(t)
	res.assert(t)
	return res
}

// keepEvidence copies the agents' logs, and writes the history (one JSON
// object per operation, times in ms since the workload began), to a
// directory that outlives the test.
func keepEvidence(t *testing.T, name string, c *cluster, h *history) {
	dir, err := os.MkdirTemp("", "cairn-faults-"+name+"-")
	if err != nil {
		t.Logf("keep evidence: %v", err)
		return
	}
	for _, a := range c.all {
		if b, err := os.ReadFile(a.logPath); err == nil {
			_ = os.WriteFile(filepath.Join(dir, a.name+".log"), b, 0o644)
		}
	}
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Logf("keep evidence: %v", err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, o := range h.snapshot() {
		_ = enc.Encode(map[string]any{
			"kind": o.kind.String(), "client": o.client, "worker": o.worker, "key": o.key, "value": o.value,
			"start_ms": float64(o.start) / 1e6, "end_ms": float64(o.end) / 1e6, "outcome": o.outcome.String(),
			"status": o.status, "error": o.errText, "values": o.values, "members": len(o.members),
		})
	}
	t.Logf("agents' logs and the history kept in %s", dir)
}

// settleAfterFault waits for the cluster to settle again and says how
// long Raft (a leader every agent names, three peers) and gossip (every
// agent alive to every agent) took; a cluster that does not settle fails
// the test (the checks still run on what can be read).
func settleAfterFault(t *testing.T, c *cluster) (raft, gossip time.Duration) {
	begin := time.Now()
	lastLog := begin
	raft = -1
	err := poll(settleLimit, 100*time.Millisecond, func() error {
		err := c.raftSettled()
		if err == nil && raft < 0 {
			raft = time.Since(begin)
		}
		if err == nil {
			err = c.gossipSettled()
		}
		if err != nil && time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			t.Logf("not settled %v after the heal: %v", time.Since(begin).Round(time.Second), err)
		}
		return err
	})
	if err != nil {
		t.Errorf("cluster not settled %v after the fault was healed: %v", settleLimit, err)
		if raft < 0 {
			raft = forever
		}
		return raft, forever
	}
	return raft, time.Since(begin)
}

// registerStable registers the name the DNS prober asks and waits until
// both clients answer it from their caches.
func registerStable(t *testing.T, c *cluster) {
	t.Helper()
	body := fmt.Sprintf(`{"Node": %q, "Address": %q, "Service": {"ID": %q, "Service": %q, "Port": 80}}`,
		stableNode, stableAddr, stableService, stableService)
	err := poll(20*time.Second, 100*time.Millisecond, func() error {
		status, b, err := call(context.Background(), c.http, http.MethodPut, c.clients[0].httpURL()+"/v1/catalog/register", body)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d: %s", status, b)
		}
		return err
	})
	if err != nil {
		t.Fatalf("register %s: %v", stableService, err)
	}
	for _, cl := range c.clients {
		err := poll(20*time.Second, 50*time.Millisecond, func() error {
			_, err := askStable(context.Background(), cl.dnsAddr())
			return err
		})
		if err != nil {
			t.Fatalf("%s does not answer %s: %v", cl.name, stableName, err)
		}
	}
}

// finalView is what the cluster holds after settling.
type finalView struct {
	kv, set   *op             // consistent reads, as operations of the history
	kvStore   *op             // the kv store's registers, read so too
	agentSvcs map[string]bool // the agent-registered services in the catalog
	diverged  findings
}

// finalState reads the registers and the set with ?consistent through the
// first client (retried until it succeeds), waits for anti-entropy to push
// what the agents stored, and checks every server's own (stale) view.
func finalState(t *testing.T, r *run) finalView {
	t.Helper()
	c := r.c
	read := func(kind opKind, service string) *op {
		var o *op
		path, decode := "/v1/catalog/service/"+service+"?consistent", decodeInstances
		if kind == opKVRead {
			path, decode = kvReadPath, decodeKV
		}
		err := poll(finalTimeout, 200*time.Millisecond, func() error {
			o = &op{kind: kind, client: "final", worker: -1}
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
			o.start = r.h.now()
			status, b, err := call(ctx, c.http, http.MethodGet, c.clients[0].httpURL()+path, "")
			o.end = r.h.now()
			switch {
			case err == nil && kind == opKVRead && status == http.StatusNotFound:
				o.values, o.members = map[string]string{}, map[string]bool{} // no key written
				return nil
			case err == nil && status != http.StatusOK:
				err = fmt.Errorf("status %d: %s", status, b)
			}
			if err == nil {
				o.values, o.members, err = decode(b)
			}
			return err
		})
		if err != nil {
			t.Fatalf("final read of %s: %v", service, err)
		}
		return o
	}
	v := finalView{kv: read(opRead, kvService), set: read(opReadSet, setService), kvStore: read(opKVRead, "")}

	// The agents' registrations: every acknowledged one, and every one
	// stored but not synced, should be there; give anti-entropy time.
	want := map[string]bool{}
	for _, o := range r.h.snapshot() {
		if o.kind == opAgentRegister && (o.outcome == ok || storedNotSynced(o)) {
			want[o.key] = true
		}
	}
	_ = poll(20*time.Second, 500*time.Millisecond, func() error {
		v.agentSvcs = read(opReadSet, agentService).members
		for id := range want {
			if !v.agentSvcs[id] {
				return fmt.Errorf("%s missing", id)
			}
		}
		return nil
	})

	// Every server's own state must come to hold what the leader does.
	for _, s := range c.servers {
		var last string
		err := poll(10*time.Second, 200*time.Millisecond, func() error {
			for _, want := range []*op{v.kv, v.set} {
				service := kvService
				if want == v.set {
					service = setService
				}
				var insts []struct {
					ServiceID   string
					ServiceMeta map[string]string
				}
				if err := c.get(s, "/v1/catalog/service/"+service+"?stale", &insts); err != nil {
					return err
				}
				got := map[string]string{}
				for _, in := range insts {
					got[in.ServiceID] = in.ServiceMeta["v"]
				}
				if diff := mapDiff(want.values, got); diff != "" {
					last = service + ": " + diff
					return fmt.Errorf("%s", last)
				}
			}
			return nil
		})
		if err != nil {
			v.diverged.add("%s: %s", s.name, last)
		}
	}
	return v
}

// mapDiff describes how got differs from want, "" when equal.
func mapDiff(want, got map[string]string) string {
	var d []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("lacks %s", k))
		} else if g != w {
			d = append(d, fmt.Sprintf("%s=%q, leader %q", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("has extra %s", k))
		}
	}
	if len(d) > 3 {
		d = append(d[:3], fmt.Sprintf("and %d more", len(d)-3))
	}
	return strings.Join(d, ", ")
}

// batchedWrites sums, over the servers, the writes they committed as the
// leader inside batch entries (group commit) and those entries, since
// each last started: the checks cover batched writes only if some were.
func batchedWrites(c *cluster) (writes, batches uint64) {
	for _, s := range c.servers {
		var m struct {
			Counters []struct {
				Name  string
				Count uint64
			}
		}
		if err := c.get(s, "/v1/agent/metrics", &m); err != nil {
			continue
		}
		for _, ctr := range m.Counters {
			switch ctr.Name {
			case "cairn_raft_batched_writes_total":
				writes += ctr.Count
			case "cairn_raft_batches_total":
				batches += ctr.Count
			}
		}
	}
	return writes, batches
}
