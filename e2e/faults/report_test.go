package faults

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/anishathalye/porcupine"
)

// gap is an interval without a successful write.
type gap struct{ from, length time.Duration }

// target is one availability target of issue 15, measured.
type target struct {
	what       string
	got, limit time.Duration
}

func (t target) met() bool { return t.got <= t.limit }

func (t target) String() string {
	mark := "met"
	if !t.met() {
		mark = "MISSED"
	}
	return fmt.Sprintf("%s: %s (≤ %v) %s", t.what, fmtDur(t.got), t.limit, mark)
}

// result is one scenario's measurements and verdicts.
type result struct {
	name, target string
	uses         string // which servers the clients used before the fault
	took         time.Duration
	// How long after the heal Raft (leader, peers) and gossip (everyone
	// alive) were whole again.
	raftSettled, gossipSettled time.Duration
	faultAt                    time.Duration
	healAt                     time.Duration
	verdict                    verdict
	dns                        []*dnsStats
	events                     []leaderEvent

	windows  map[string]gap // client → longest gap between successful writes through it
	stall    *op            // the slowest write
	writes   [3]int         // by outcome
	reads    [3]int
	statuses map[int]int // HTTP status (0: none, the request failed) → operations
	// Writes answered 500: a 500 says nothing of the outcome, so each is a
	// finding. unsent500 were never sent to the leader (the error says
	// so: nothing happened, a 503 would let the caller retry); unknown500
	// may or may not have been applied.
	unknown500, unsent500 int
	messages              map[string]int
	newLeader             string
	newLeaderAt           time.Duration
	afterLeader           map[string]time.Duration // client → first successful write's end after the new leader
	stragglers            map[string]time.Duration // client → how long after the new leader its last write begun before it ended
	targets               []target
	// batched writes, in batches entries, as the servers counted them
	// (batchedWrites).
	batched, batches uint64
}

// measure fills in the figures from the history.
func (res *result) measure(r *run, ops []*op, loadEnd time.Duration) {
	res.faultAt, res.healAt = r.faultAt, r.healAt
	res.statuses, res.messages = map[int]int{}, map[string]int{}
	okEnds := map[string][]time.Duration{}
	for _, o := range ops {
		res.statuses[o.status]++
		if o.outcome != ok {
			res.messages[fmt.Sprintf("%s %d %s", o.kind, o.status, normalize(o.errText))]++
		}
		if !o.kind.isWrite() {
			res.reads[o.outcome]++
			continue
		}
		res.writes[o.outcome]++
		if o.status == 500 {
			if strings.Contains(o.errText, "request not sent") {
				res.unsent500++
			} else {
				res.unknown500++
			}
		}
		if res.stall == nil || o.end-o.start > res.stall.end-res.stall.start {
			res.stall = o
		}
		if o.outcome == ok {
			okEnds[o.client] = append(okEnds[o.client], o.end)
		}
	}
	res.windows = map[string]gap{}
	for _, cl := range r.c.clients {
		ends := okEnds[cl.name]
		slices.Sort(ends)
		last, g := time.Duration(0), gap{}
		for _, e := range append(ends, loadEnd) {
			if e-last > g.length {
				g = gap{from: last, length: e - last}
			}
			last = e
		}
		res.windows[cl.name] = g
	}

	res.afterLeader, res.stragglers = map[string]time.Duration{}, map[string]time.Duration{}
	at, leader, found := newLeaderAt(res.events, r.leader.rpcAddr(), r.faultAt)
	if !found {
		return
	}
	res.newLeader, res.newLeaderAt = leader, at
	for _, o := range ops {
		if !o.kind.isWrite() {
			continue
		}
		if o.start < at && o.end > at {
			res.stragglers[o.client] = max(res.stragglers[o.client], o.end-at)
		}
		if o.outcome == ok && o.end >= at {
			if prev, seen := res.afterLeader[o.client]; !seen || o.end-at < prev {
				res.afterLeader[o.client] = o.end - at
			}
		}
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

// normalize makes error texts that differ only in numbers (addresses,
// IDs, durations) count as one.
func normalize(s string) string {
	s = digits.ReplaceAllString(strings.TrimPrefix(s, `{"error":"`), "N")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// dnsErrors sums every client's DNS errors.
func (res *result) dnsErrors() (errs, queries int) {
	for _, st := range res.dns {
		queries += st.queries
		for _, n := range st.errors {
			errs += n
		}
	}
	return errs, queries
}

// log prints everything measured about the scenario.
func (res *result) log(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: hit %s; clients used %s; fault at +%v, healed at +%v; took %v\n", res.name, res.target, res.uses,
		res.faultAt.Round(time.Millisecond), res.healAt.Round(time.Millisecond), res.took.Round(time.Millisecond))
	fmt.Fprintf(&b, "  after the heal: Raft whole after %s, gossip after %s\n", fmtDur(res.raftSettled), fmtDur(res.gossipSettled))
	for _, name := range slices.Sorted(maps.Keys(res.windows)) {
		g := res.windows[name]
		fmt.Fprintf(&b, "  write unavailability through %s: %s, from +%v\n", name, fmtDur(g.length), g.from.Round(time.Millisecond))
	}
	if s := res.stall; s != nil {
		fmt.Fprintf(&b, "  stall: %s %s %s through %s took %s (+%v..+%v, %s)\n", s.kind, s.key, s.value, s.client,
			fmtDur(s.end-s.start), s.start.Round(time.Millisecond), s.end.Round(time.Millisecond), s.outcome)
	}
	fmt.Fprintf(&b, "  writes ok/fail/unknown %d/%d/%d, reads ok/fail/unknown %d/%d/%d; HTTP statuses %s\n",
		res.writes[ok], res.writes[failed], res.writes[unknown], res.reads[ok], res.reads[failed], res.reads[unknown], res.statusText())
	fmt.Fprintf(&b, "  group commit: %d writes in %d batch entries\n", res.batched, res.batches)
	if res.unknown500+res.unsent500 > 0 {
		fmt.Fprintf(&b, "  finding: %d writes answered 500 with an unknown outcome, %d answered 500 though never sent to the leader\n",
			res.unknown500, res.unsent500)
	}
	for _, m := range slices.SortedFunc(maps.Keys(res.messages), func(a, b string) int { return cmp.Compare(res.messages[b], res.messages[a]) }) {
		fmt.Fprintf(&b, "    %d× %s\n", res.messages[m], m)
	}
	if res.newLeader != "" {
		fmt.Fprintf(&b, "  new leader %s named at +%v (%v after the fault)\n",
			res.newLeader, res.newLeaderAt.Round(time.Millisecond), (res.newLeaderAt - res.faultAt).Round(time.Millisecond))
		for _, name := range slices.Sorted(maps.Keys(res.windows)) {
			first, found := res.afterLeader[name]
			if !found {
				first = forever
			}
			fmt.Fprintf(&b, "    through %s: first successful write %s after it; writes begun before it ended up to %s after it\n",
				name, fmtDur(first), fmtDur(res.stragglers[name]))
		}
	}
	for _, st := range res.dns {
		fmt.Fprintf(&b, "  DNS %s via %s: %d queries, errors %v (first at %v)\n", stableName, st.client, st.queries, st.errors, st.first)
	}
	v := &res.verdict
	fmt.Fprintf(&b, "  lost writes: %s\n  phantoms: %s\n  disappeared: %s\n  linearizable: %s %s\n  replicas diverged: %s\n  stored-but-not-synced never pushed: %s\n",
		v.lost, v.phantom, v.disappeared, v.linearizable, v.vizPath, v.diverged, v.notSynced)
	for _, tg := range res.targets {
		fmt.Fprintf(&b, "  target %s\n", tg)
	}
	t.Log(b.String())
}

// assert fails the test on a hard verdict, and on a missed target when
// CAIRN_FAULT_TARGETS=1.
func (res *result) assert(t *testing.T) {
	v := &res.verdict
	if v.lost.n > 0 {
		t.Errorf("acknowledged writes lost: %s", v.lost)
	}
	if v.phantom.n > 0 {
		t.Errorf("values no write explains: %s", v.phantom)
	}
	if v.disappeared.n > 0 {
		t.Errorf("observed values disappeared: %s", v.disappeared)
	}
	if v.linearizable != porcupine.Ok {
		t.Errorf("register history linearizable: %s (visualization: %s)", v.linearizable, v.vizPath)
	}
	if v.diverged.n > 0 {
		t.Errorf("servers diverged from the leader: %s", v.diverged)
	}
	if res.batched == 0 {
		t.Errorf("no write was committed in a batch entry: the checks did not cover group commit")
	}
	if errs, queries := res.dnsErrors(); errs > 0 {
		t.Errorf("DNS for the cached name %s: %d errors in %d queries, want 0", stableName, errs, queries)
	}
	for _, tg := range res.targets {
		if !tg.met() && targetsEnforced {
			t.Errorf("target missed: %s", tg)
		}
	}
}

func (res *result) statusText() string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(res.statuses)) {
		name := fmt.Sprint(code)
		if code == 0 {
			name = "none"
		}
		parts = append(parts, fmt.Sprintf("%s×%d", name, res.statuses[code]))
	}
	return strings.Join(parts, " ")
}

// summaryTable is one line per scenario.
func summaryTable(results []*result) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\thit\tc1 window\tc2 window\tstall\twrites ok/fail/unk\tstatuses\t500 unk/unsent\tDNS err\tlost\tgone\tlinearizable\ttargets\tgossip\ttook")
	for _, res := range results {
		stall := "-"
		if res.stall != nil {
			stall = fmtDur(res.stall.end - res.stall.start)
		}
		errs, queries := res.dnsErrors()
		targets := "-"
		if len(res.targets) > 0 {
			missed := 0
			for _, tg := range res.targets {
				if !tg.met() {
					missed++
				}
			}
			targets = fmt.Sprintf("%d/%d met", len(res.targets)-missed, len(res.targets))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d/%d/%d\t%s\t%d/%d\t%d/%d\t%d\t%d\t%s\t%s\t%s\t%v\n", res.name, res.target,
			fmtDur(res.windows["c1"].length), fmtDur(res.windows["c2"].length), stall,
			res.writes[ok], res.writes[failed], res.writes[unknown], res.statusText(), res.unknown500, res.unsent500, errs, queries,
			res.verdict.lost.n, res.verdict.disappeared.n+res.verdict.phantom.n, res.verdict.linearizable, targets,
			fmtDur(res.gossipSettled), res.took.Round(time.Second))
	}
	w.Flush()
	return b.String()
}

// fmtDur prints a duration in seconds with two decimals; forever as ∞.
func fmtDur(d time.Duration) string {
	if d == forever {
		return "∞"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
