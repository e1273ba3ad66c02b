package faults

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checker's own tests: made-up histories, no cluster, run without
// CAIRN_E2E. Times are in milliseconds.

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func kvWrite(key, value string, start, end int, out outcome) *op {
	return &op{kind: opWrite, client: "c1", worker: 0, key: key, value: value, start: ms(start), end: ms(end), outcome: out}
}

func kvRead(start, end int, values map[string]string) *op {
	return &op{kind: opRead, client: "c2", worker: 1, start: ms(start), end: ms(end), outcome: ok, values: values}
}

func TestCheckRegisters(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		ops                        []*op
		final                      map[string]string
		lost, phantom, disappeared int
		linearizable               porcupine.CheckResult
	}{{
		name:         "in order",
		ops:          []*op{kvWrite("k0", "a", 0, 10, ok), kvRead(20, 30, map[string]string{"k0": "a"}), kvWrite("k0", "b", 40, 50, ok)},
		final:        map[string]string{"k0": "b"},
		linearizable: porcupine.Ok,
	}, {
		name:         "concurrent read may see either",
		ops:          []*op{kvWrite("k0", "a", 0, 10, ok), kvWrite("k0", "b", 20, 50, ok), kvRead(30, 40, map[string]string{"k0": "a"})},
		final:        map[string]string{"k0": "b"},
		linearizable: porcupine.Ok,
	}, {
		name:  "acknowledged write superseded by an older one",
		ops:   []*op{kvWrite("k0", "a", 0, 10, ok), kvWrite("k0", "b", 20, 30, ok)},
		final: map[string]string{"k0": "a"},
		lost:  1, linearizable: porcupine.Illegal,
	}, {
		name:  "acknowledged write absent",
		ops:   []*op{kvWrite("k0", "a", 0, 10, ok)},
		final: map[string]string{},
		lost:  1, linearizable: porcupine.Illegal,
	}, {
		name: "an old write replayed after a newer one was read",
		ops: []*op{kvWrite("k0", "a", 0, 10, ok), kvWrite("k0", "b", 20, 30, ok),
			kvRead(40, 50, map[string]string{"k0": "b"}), kvRead(60, 70, map[string]string{"k0": "a"}), kvWrite("k0", "c", 80, 90, ok)},
		final:       map[string]string{"k0": "c"},
		disappeared: 1, linearizable: porcupine.Illegal,
	}, {
		name:         "an unknown write may take effect late",
		ops:          []*op{kvWrite("k0", "a", 0, 10, ok), kvWrite("k0", "b", 20, 30, unknown), kvWrite("k0", "c", 40, 50, ok), kvRead(60, 70, map[string]string{"k0": "b"})},
		final:        map[string]string{"k0": "b"},
		linearizable: porcupine.Ok,
	}, {
		name:  "a refused write took effect",
		ops:   []*op{kvWrite("k0", "a", 0, 10, failed)},
		final: map[string]string{"k0": "a"},
		// The final read saw it, and so did porcupine, which leaves the
		// write out: nothing wrote "a".
		phantom: 1, linearizable: porcupine.Illegal,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var v verdict
			checkRegisters(&v, tc.ops, &op{kind: opRead, client: "final", worker: -1, start: ms(1000), end: ms(1010), values: tc.final}, opWrite, opRead)
			if v.lost.n != tc.lost || v.phantom.n != tc.phantom || v.disappeared.n != tc.disappeared || v.linearizable != tc.linearizable {
				t.Errorf("got lost %s, phantom %s, disappeared %s, linearizable %s; want %d, %d, %d, %s",
					v.lost, v.phantom, v.disappeared, v.linearizable, tc.lost, tc.phantom, tc.disappeared, tc.linearizable)
			}
		})
	}
}

func setOp(kind opKind, id string, start, end int, out outcome) *op {
	return &op{kind: kind, client: "c1", key: id, start: ms(start), end: ms(end), outcome: out}
}

func setRead(start, end int, ids ...string) *op {
	o := &op{kind: opReadSet, client: "c2", start: ms(start), end: ms(end), outcome: ok, members: map[string]bool{}}
	for _, id := range ids {
		o.members[id] = true
	}
	return o
}

func TestCheckSet(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		ops                        []*op
		final                      []string
		lost, phantom, disappeared int
	}{{
		name:  "registered, read, deregistered",
		ops:   []*op{setOp(opRegister, "x", 0, 10, ok), setRead(20, 30, "x"), setOp(opDeregister, "x", 40, 50, ok), setRead(60, 70)},
		final: nil,
	}, {
		name:  "acknowledged registration missing",
		ops:   []*op{setOp(opRegister, "x", 0, 10, ok)},
		final: nil, lost: 1, disappeared: 1, // the final read is a read too
	}, {
		name:  "acknowledged deregistration undone",
		ops:   []*op{setOp(opRegister, "x", 0, 10, ok), setOp(opDeregister, "x", 20, 30, ok), setRead(40, 50, "x")},
		final: []string{"x"}, lost: 1, disappeared: 1,
	}, {
		name:  "member missing from a read after its acknowledgment",
		ops:   []*op{setOp(opRegister, "x", 0, 10, ok), setRead(20, 30)},
		final: []string{"x"}, disappeared: 1,
	}, {
		name:  "an unknown registration may or may not be there",
		ops:   []*op{setOp(opRegister, "x", 0, 10, unknown), setOp(opRegister, "y", 0, 10, unknown), setRead(20, 30)},
		final: []string{"x"},
	}, {
		name:  "a member nobody registered",
		ops:   []*op{setOp(opRegister, "x", 0, 10, failed)},
		final: []string{"x", "z"}, phantom: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var v verdict
			checkSet(&v, tc.ops, setRead(1000, 1010, tc.final...))
			if v.lost.n != tc.lost || v.phantom.n != tc.phantom || v.disappeared.n != tc.disappeared {
				t.Errorf("got lost %s, phantom %s, disappeared %s; want %d, %d, %d",
					v.lost, v.phantom, v.disappeared, tc.lost, tc.phantom, tc.disappeared)
			}
		})
	}
}

func TestCheckAgentRegistrations(t *testing.T) {
	ops := []*op{
		setOp(opAgentRegister, "a-1", 0, 10, ok),
		setOp(opAgentRegister, "a-2", 0, 10, ok),
		{kind: opAgentRegister, key: "a-3", outcome: unknown, status: 503, errText: "stored on this agent and not yet in the catalog"},
		{kind: opAgentRegister, key: "a-4", outcome: unknown, errText: "context deadline exceeded"},
	}
	var v verdict
	checkAgentRegistrations(&v, ops, map[string]bool{"a-1": true})
	if v.lost.n != 1 || v.notSynced.n != 1 {
		t.Errorf("got lost %s, not synced %s; want 1 (a-2) and 1 (a-3)", v.lost, v.notSynced)
	}
}

func TestParseProcAddr(t *testing.T) {
	ip, port, ok := parseProcAddr("0D0BC80A:206C")
	if !ok || ip != "10.200.11.13" || port != 8300 {
		t.Errorf("got %s %d %v, want 10.200.11.13 8300 true", ip, port, ok)
	}
	if _, _, ok := parseProcAddr("junk"); ok {
		t.Error("junk parsed")
	}
}
