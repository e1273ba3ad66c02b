package faults

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// forever is the end of an operation whose outcome is unknown: it may
// take effect at any time after its start.
const forever = time.Duration(math.MaxInt64)

// findings collects one kind of violation, keeping the first few
// descriptions and counting the rest.
type findings struct {
	n     int
	first []string
}

func (f *findings) add(format string, args ...any) {
	f.n++
	if len(f.first) < 5 {
		f.first = append(f.first, fmt.Sprintf(format, args...))
	}
}

func (f findings) String() string {
	if f.n == 0 {
		return "none"
	}
	s := strings.Join(f.first, "; ")
	if f.n > len(f.first) {
		s += fmt.Sprintf("; and %d more", f.n-len(f.first))
	}
	return fmt.Sprintf("%d: %s", f.n, s)
}

// verdict is what the checker found in one scenario's history.
type verdict struct {
	lost         findings // acknowledged writes missing from the final state
	phantom      findings // values or members no write explains (or only a refused one)
	disappeared  findings // observed (or acknowledged), later gone with no write that explains it
	linearizable porcupine.CheckResult
	vizPath      string   // porcupine's visualization, when not linearizable
	notSynced    findings // agent registrations answered "stored but not synced" that never reached the catalog
	diverged     findings // servers whose state differs from the leader's after settling
}

// settleBound is how long after a 503 "may or may not have been
// applied" the write may still take effect (issue 28, finding 2): the
// agent answers only once the deadline its request carried has passed,
// and no server starts it after that; one the leader started just before
// it commits within the time a new leader takes to be elected, should
// the leader fail right then.
const settleBound = 2 * time.Second

// endOf is when an operation's effect is known to be done: its end; for
// an unknown outcome answered by the agent, its end and settleBound; for
// one no answer came for (a timeout, a broken connection), never.
func endOf(o *op) time.Duration {
	switch {
	case o.outcome != unknown:
		return o.end
	case settles(o):
		return o.end + settleBound
	}
	return forever
}

// settles says whether o is a write the agent answered "may or may not
// have been applied", which settles within settleBound.
func settles(o *op) bool {
	return o.outcome == unknown && o.status == http.StatusServiceUnavailable && strings.Contains(o.errText, "may or may not")
}

// checkRegisters checks the kv registers: final is the consistent read
// made after the scenario settled (also part of reads). The registers are
// those the operations of kinds write and read write and read: the
// catalog's (opWrite, opRead) or the kv store's (opKVWrite, opKVRead).
func checkRegisters(v *verdict, ops []*op, final *op, write, read opKind) {
	writes := map[string]*op{} // value → its write (values are unique)
	acked := map[string][]*op{}
	var reads []*op
	for _, o := range ops {
		switch {
		case o.kind == write:
			writes[o.value] = o
			if o.outcome == ok {
				acked[o.key] = append(acked[o.key], o)
			}
		case o.kind == read && o.outcome == ok:
			reads = append(reads, o)
		}
	}
	reads = append(reads, final)
	for _, r := range reads {
		for key, val := range r.values {
			if w := writes[val]; w == nil || w.key != key || w.outcome == failed {
				v.phantom.add("%s read %s=%q at +%v, which no write (or only a refused one) wrote", r.client, key, val, r.end.Round(time.Millisecond))
			}
		}
	}

	for i := range numKeys {
		key := fmt.Sprintf("k%d", i)
		val, present := final.values[key]
		if !present {
			if n := len(acked[key]); n > 0 {
				v.lost.add("%s: %d acknowledged writes, absent at the end", key, n)
			}
			continue
		}
		w := writes[val]
		if w == nil {
			continue // a phantom, reported above
		}
		for _, a := range acked[key] {
			if a.start > endOf(w) {
				v.lost.add("%s=%q (acknowledged at +%v) lost: the end holds %q, written before it (+%v..+%v)",
					key, a.value, a.end.Round(time.Millisecond), val, w.start.Round(time.Millisecond), w.end.Round(time.Millisecond))
			}
		}
	}
	checkReadOrder(v, reads, writes)
	checkLinearizable(v, ops, final, writes, reads)
}

// checkReadOrder finds a read that returned a value older than one an
// earlier read (one that ended before it started) had returned: the
// newer value disappeared although no later write explains it. A value
// is older than another when its write ended before the other's began.
func checkReadOrder(v *verdict, reads []*op, writes map[string]*op) {
	byStart := slices.SortedFunc(slices.Values(reads), func(a, b *op) int { return cmp.Compare(a.start, b.start) })
	byEnd := slices.SortedFunc(slices.Values(reads), func(a, b *op) int { return cmp.Compare(a.end, b.end) })
	for i := range numKeys {
		key := fmt.Sprintf("k%d", i)
		var newest *op // the write of the newest value seen by a read that has ended
		var seenBy *op // that read
		j := 0
		for _, r := range byStart {
			for ; j < len(byEnd) && byEnd[j].end < r.start; j++ {
				if w := writes[byEnd[j].values[key]]; w != nil && (newest == nil || w.start > newest.start) {
					newest, seenBy = w, byEnd[j]
				}
			}
			if newest == nil {
				continue
			}
			val, present := r.values[key]
			w := writes[val]
			switch {
			case !present:
				v.disappeared.add("%s: %s read at +%v..+%v found it absent; %s had read %q at +%v",
					key, r.client, r.start.Round(time.Millisecond), r.end.Round(time.Millisecond), seenBy.client, newest.value, seenBy.end.Round(time.Millisecond))
			case w != nil && endOf(w) < newest.start:
				v.disappeared.add("%s: %s read %q (written +%v..+%v) at +%v..+%v after %s had read the newer %q (written from +%v) at +%v",
					key, r.client, val, w.start.Round(time.Millisecond), w.end.Round(time.Millisecond), r.start.Round(time.Millisecond), r.end.Round(time.Millisecond),
					seenBy.client, newest.value, newest.start.Round(time.Millisecond), seenBy.end.Round(time.Millisecond))
			}
		}
	}
}

// kvInput is a porcupine operation's input: a write of value to key, or
// a read of key (whose output is the value, "" when absent).
type kvInput struct {
	key, value string
	write      bool
}

// registerModel is a register per key, partitioned by key.
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, o := range history {
			k := o.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], o)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(kvInput)
		if in.write {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		if in.write {
			return fmt.Sprintf("put(%s, %q)", in.key, in.value)
		}
		return fmt.Sprintf("get(%s) → %q", in.key, output.(string))
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state.(string)) },
}

// checkLinearizable runs porcupine over the register history: acknowledged
// writes, unknown ones that some read saw (one nobody saw can be left out
// of a register's history without changing the verdict), and every
// successful read, one operation per key.
func checkLinearizable(v *verdict, ops []*op, final *op, writes map[string]*op, reads []*op) {
	seen := map[string]bool{}
	for _, r := range reads {
		for _, val := range r.values {
			seen[val] = true
		}
	}
	var horizon time.Duration
	for _, o := range ops {
		horizon = max(horizon, o.end)
	}
	horizon = max(horizon, final.end) + time.Hour
	var hist []porcupine.Operation
	extra := 0 // client IDs for operations that never return, after the workers'
	for _, o := range ops {
		if o.worker >= extra {
			extra = o.worker + 2 // +1 for the final read
		}
	}
	for _, w := range writes {
		if w.outcome == failed || (w.outcome == unknown && !seen[w.value]) {
			continue
		}
		client, end := w.worker, w.end
		if w.outcome == unknown {
			// On a client of its own: it may end after the worker's next.
			client, end = extra, horizon
			if settles(w) {
				end = w.end + settleBound
			}
			extra++
		}
		hist = append(hist, porcupine.Operation{ClientId: client, Input: kvInput{key: w.key, value: w.value, write: true},
			Call: int64(w.start), Output: "", Return: int64(end)})
	}
	for _, r := range reads {
		client := r.worker
		if r == final {
			client = extra - 1
		}
		for i := range numKeys {
			key := fmt.Sprintf("k%d", i)
			hist = append(hist, porcupine.Operation{ClientId: client, Input: kvInput{key: key},
				Call: int64(r.start), Output: r.values[key], Return: int64(r.end)})
		}
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, hist, time.Minute)
	v.linearizable = res
	if res == porcupine.Illegal {
		dir, err := os.MkdirTemp("", "cairn-faults-porcupine-")
		if err == nil {
			v.vizPath = filepath.Join(dir, "history.html")
			if porcupine.VisualizePath(registerModel, info, v.vizPath) != nil {
				v.vizPath = ""
			}
		}
	}
}

// checkSet checks the set of unique registrations against final, the
// members of a consistent read made after the scenario settled.
func checkSet(v *verdict, ops []*op, final *op) {
	reg, dereg := map[string]*op{}, map[string]*op{}
	var reads []*op
	for _, o := range ops {
		switch {
		case o.kind == opRegister:
			reg[o.key] = o
		case o.kind == opDeregister:
			dereg[o.key] = o
		case o.kind == opReadSet && o.outcome == ok:
			reads = append(reads, o)
		}
	}
	reads = append(reads, final)
	slices.SortFunc(reads, func(a, b *op) int { return cmp.Compare(a.start, b.start) })
	for _, r := range reads {
		for id := range r.members {
			if o := reg[id]; o == nil || o.outcome == failed {
				v.phantom.add("%s read member %s at +%v, which no registration (or only a refused one) added", r.client, id, r.end.Round(time.Millisecond))
			}
		}
	}
	for id, r := range reg {
		d, present := dereg[id], final.members[id]
		switch {
		case r.outcome == ok && d == nil && !present:
			v.lost.add("member %s (registered through %s, acknowledged at +%v) absent at the end", id, r.client, r.end.Round(time.Millisecond))
		case d != nil && d.outcome == ok && present:
			v.lost.add("member %s deregistered through %s (acknowledged at +%v) but present at the end", id, d.client, d.end.Round(time.Millisecond))
		}
		// From when the member must be seen: its acknowledgment, or the
		// first read that saw it; until a deregistration may have begun.
		since := forever
		if r.outcome == ok {
			since = r.end
		}
		for _, rd := range reads {
			if rd.members[id] {
				since = min(since, rd.end)
			}
		}
		until := forever
		if d != nil {
			until = d.start
		}
		for _, rd := range reads[sortedAfter(reads, since):] {
			if rd.end >= until {
				break
			}
			if !rd.members[id] {
				v.disappeared.add("member %s: %s read at +%v..+%v lacks it, present (or acknowledged) since +%v, no deregistration begun",
					id, rd.client, rd.start.Round(time.Millisecond), rd.end.Round(time.Millisecond), since.Round(time.Millisecond))
				break
			}
		}
		if d != nil && d.outcome == ok {
			for _, rd := range reads[sortedAfter(reads, d.end):] {
				if rd.members[id] {
					v.disappeared.add("member %s: deregistration acknowledged at +%v, yet %s read it at +%v..+%v",
						id, d.end.Round(time.Millisecond), rd.client, rd.start.Round(time.Millisecond), rd.end.Round(time.Millisecond))
					break
				}
			}
		}
	}
}

// sortedAfter returns the index of the first read (sorted by start) that
// starts after t.
func sortedAfter(reads []*op, t time.Duration) int {
	i, _ := slices.BinarySearchFunc(reads, t, func(o *op, t time.Duration) int {
		if o.start <= t {
			return -1
		}
		return 1
	})
	return i
}

// checkAgentRegistrations checks the agent's own registrations against
// final: an acknowledged one must be in the catalog; one answered "stored
// on the agent but not yet in the catalog" should have been pushed by
// anti-entropy since (a finding, not an assertion: no 200 promised it).
func checkAgentRegistrations(v *verdict, ops []*op, final map[string]bool) {
	for _, o := range ops {
		if o.kind != opAgentRegister || final[o.key] {
			continue
		}
		switch {
		case o.outcome == ok:
			v.lost.add("agent service %s (acknowledged by %s at +%v) not in the catalog", o.key, o.client, o.end.Round(time.Millisecond))
		case storedNotSynced(o):
			v.notSynced.add("agent service %s (%s answered %d %q at +%v) not in the catalog", o.key, o.client, o.status, o.errText, o.end.Round(time.Millisecond))
		}
	}
}

// storedNotSynced says whether an agent registration's error says the
// agent kept it (local.ErrNotSynced), so that anti-entropy will push it.
func storedNotSynced(o *op) bool {
	return o.kind == opAgentRegister && o.outcome == unknown && strings.Contains(o.errText, "not yet in the catalog")
}
