package gossip

import (
	"testing"
	"time"
)

func TestReconnectTarget(t *testing.T) {
	first := func(int) int { return 0 }
	for _, tc := range []struct {
		name string
		roll float32
		set  func(p *Pool)
		want string // "" for no attempt, "*" for any failed member
	}{
		{"nothing failed", 0, func(p *Pool) {}, ""},
		{"cut off alone: always", 0.99, func(p *Pool) {
			for _, n := range []string{"a", "b", "c"} {
				p.setStatus(n, StatusFailed)
			}
		}, "*"},
		{"one failed of three alive: roll below 1/3", 0.3, func(p *Pool) { p.setStatus("c", StatusFailed) }, "c"},
		{"one failed of three alive: roll above 1/3", 0.4, func(p *Pool) { p.setStatus("c", StatusFailed) }, ""},
		{"left", 0, func(p *Pool) { p.setStatus("a", StatusLeft) }, ""},
		{"failed after a leave intent", 0, func(p *Pool) {
			p.setStatus("a", StatusFailed)
			p.intents["a"] = time.Now()
		}, ""},
		{"failed longer than RetainDead", 0, func(p *Pool) {
			p.setStatus("a", StatusFailed)
			m := p.members["a"]
			m.Since = time.Now().Add(-2 * p.cfg.RetainDead)
			p.members["a"] = m
		}, ""},
		{"self left", 0, func(p *Pool) { p.setStatus("self", StatusLeft) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPool(t)
			ev := eventDelegate{p: p}
			for _, n := range []string{"self", "a", "b", "c"} {
				ev.NotifyJoin(testNode(t, n))
			}
			tc.set(p)
			m, ok := p.reconnectTarget(tc.roll, first)
			got := m.Name
			if tc.want == "*" && ok && m.Status == StatusFailed {
				got = "*"
			}
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("reconnectTarget(%v) = %q, %v; want %q", tc.roll, got, ok, tc.want)
			}
		})
	}
}

// setStatus sets a known member's status, as of now.
func (p *Pool) setStatus(name string, s Status) {
	m := p.members[name]
	m.Status, m.Since = s, time.Now()
	p.members[name] = m
}
