package gossip

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// testPool is a Pool without memberlist, to drive its delegates directly.
func testPool(t *testing.T) *Pool {
	t.Helper()
	cfg := Config{NodeName: "self", Pool: LAN, Datacenter: "dc1", RetainDead: time.Minute}
	cfg.Timing.RetransmitMult = 2
	return newPool(cfg, slog.New(slog.DiscardHandler))
}

func testNode(t *testing.T, name string) *memberlist.Node {
	t.Helper()
	md, err := encodeMeta(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	return &memberlist.Node{Name: name, Addr: net.IPv4(10, 0, 0, 1), Port: 8301, Meta: md}
}

func status(p *Pool, name string) Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.members[name].Status
}

func TestLeaveIntentEitherOrder(t *testing.T) {
	ev := eventDelegate{p: testPool(t)}
	p := ev.p
	d := delegate{p: p}
	for _, n := range []string{"a", "b", "c"} {
		ev.NotifyJoin(testNode(t, n))
	}

	// Intent first, then memberlist reports a gone: Left.
	d.NotifyMsg(encodeIntent("a"))
	if got := p.broadcasts.NumQueued(); got != 1 {
		t.Errorf("intent for a rebroadcast %d times, want queued once", got)
	}
	d.NotifyMsg(encodeIntent("a"))
	if got := p.broadcasts.NumQueued(); got != 1 {
		t.Errorf("second intent for a: %d queued, want still 1", got)
	}
	ev.NotifyLeave(testNode(t, "a"))
	if got := status(p, "a"); got != StatusLeft {
		t.Errorf("a after intent then leave: %v, want left", got)
	}

	// memberlist reports b gone first (Failed), then its intent arrives: Left.
	ev.NotifyLeave(testNode(t, "b"))
	if got := status(p, "b"); got != StatusFailed {
		t.Errorf("b gone without intent: %v, want failed", got)
	}
	<-p.changes
	d.NotifyMsg(encodeIntent("b"))
	if got := status(p, "b"); got != StatusLeft {
		t.Errorf("b after leave then intent: %v, want left", got)
	}
	select {
	case <-p.changes:
	default:
		t.Error("no change signal when b turned from failed to left")
	}

	// No intent: Failed. An intent for an unknown member, or garbage, is
	// dropped.
	ev.NotifyLeave(testNode(t, "c"))
	d.NotifyMsg(encodeIntent("stranger"))
	d.NotifyMsg([]byte{msgLeaveIntent, 9, 'x'})
	d.NotifyMsg(nil)
	if got := status(p, "c"); got != StatusFailed {
		t.Errorf("c gone without intent: %v, want failed", got)
	}
	if _, ok := p.intents["stranger"]; ok {
		t.Error("intent of an unknown member was kept")
	}

	// a comes back: its old intent no longer counts.
	ev.NotifyJoin(testNode(t, "a"))
	ev.NotifyLeave(testNode(t, "a"))
	if got := status(p, "a"); got != StatusFailed {
		t.Errorf("a rejoined then gone without a new intent: %v, want failed", got)
	}
}

func TestObserveIgnoresBadMeta(t *testing.T) {
	p := testPool(t)
	n := testNode(t, "x")
	n.Meta = []byte{9, 9, 9}
	eventDelegate{p: p}.NotifyJoin(n)
	if len(p.Members()) != 0 {
		t.Errorf("member with bad metadata recorded: %+v", p.Members())
	}
}

func TestPeerFilter(t *testing.T) {
	md := func(m meta) []byte { b, _ := encodeMeta(m); return b }
	server := func(dc string) []byte {
		return md(meta{Role: RoleServer, Datacenter: dc, RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1})
	}
	lan := peerFilter{kind: LAN, dc: "dc1", min: ProtocolVersionMin, max: ProtocolVersionMax}
	wan := peerFilter{kind: WAN, dc: "dc1", min: ProtocolVersionMin, max: ProtocolVersionMax}
	for _, tc := range []struct {
		name   string
		f      peerFilter
		node   string
		meta   []byte
		accept bool
	}{
		{"lan same dc", lan, "s1", server("dc1"), true},
		{"lan client", lan, "c1", md(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1}), true},
		{"lan other dc", lan, "s1", server("dc2"), false},
		{"lan new protocol", lan, "s1", md(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: ProtocolVersionMax + 1}), false},
		{"lan new protocol accepting ours", lan, "s1", md(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: ProtocolVersionMax + 1,
			ProtocolMin: ProtocolVersionMax, ProtocolMax: ProtocolVersionMax + 1}), true},
		{"lan new range without ours", lan, "s1", md(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: ProtocolVersionMax + 1,
			ProtocolMin: ProtocolVersionMax + 1, ProtocolMax: ProtocolVersionMax + 2}), false},
		{"lan bad meta", lan, "s1", []byte("garbage"), false},
		{"wan other dc", wan, "s1.dc2", server("dc2"), true},
		{"wan client", wan, "c1.dc1", md(meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1}), false},
		{"wan name without dc", wan, "s1", server("dc1"), false},
		{"wan name with other dc", wan, "s1.dc2", server("dc1"), false},
		{"wan empty node", wan, ".dc1", server("dc1"), false},
	} {
		n := &memberlist.Node{Name: tc.node, Meta: tc.meta}
		errAlive := tc.f.NotifyAlive(n)
		errMerge := tc.f.NotifyMerge([]*memberlist.Node{n})
		if (errAlive == nil) != tc.accept || (errMerge == nil) != tc.accept {
			t.Errorf("%s: NotifyAlive = %v, NotifyMerge = %v; want accepted %v", tc.name, errAlive, errMerge, tc.accept)
		}
	}
}

// TestForceLeave: a failed member is turned Left and an intent gossiped
// for it (the call returns once it went out); with prune it is forgotten,
// here and by a member receiving the prune intent. An alive member, this
// one and an unknown name are left alone.
func TestForceLeave(t *testing.T) {
	p := testPool(t)
	ev := eventDelegate{p: p}
	for _, n := range []string{"self", "a", "b", "c", "d"} {
		ev.NotifyJoin(testNode(t, n))
	}
	ev.NotifyLeave(testNode(t, "a"))
	ev.NotifyLeave(testNode(t, "b"))

	forceLeave := func(name string, prune bool) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- p.ForceLeave(context.Background(), name, prune) }()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ForceLeave(%s, %v): %v", name, prune, err)
				}
				return
			case <-deadline:
				t.Fatalf("ForceLeave(%s, %v) did not return once its intent was sent", name, prune)
			case <-time.After(time.Millisecond):
				p.broadcasts.GetBroadcasts(0, 1400) // what memberlist's gossip does
			}
		}
	}
	forceLeave("a", false)
	if got := status(p, "a"); got != StatusLeft {
		t.Errorf("a after force-leave: %v, want left", got)
	}
	forceLeave("b", true)
	if _, ok := p.members["b"]; ok {
		t.Error("b after force-leave -prune: still known, want forgotten")
	}
	for _, name := range []string{"c", "self", "stranger"} {
		if err := p.ForceLeave(context.Background(), name, true); err != nil {
			t.Errorf("ForceLeave(%s): %v", name, err)
		}
	}
	if got := status(p, "c"); got != StatusAlive {
		t.Errorf("alive c after force-leave: %v, want alive", got)
	}
	if got := status(p, "self"); got != StatusAlive {
		t.Errorf("self after force-leave: %v, want alive", got)
	}

	// Another member receives a prune intent for a member it saw fail.
	q := testPool(t)
	qev := eventDelegate{p: q}
	qev.NotifyJoin(testNode(t, "a"))
	qev.NotifyLeave(testNode(t, "a"))
	delegate{p: q}.NotifyMsg(encodeIntentOf(msgPruneIntent, "a"))
	if len(q.Members()) != 0 {
		t.Errorf("after a prune intent: members %+v, want none", q.Members())
	}
	if got := q.broadcasts.NumQueued(); got != 1 {
		t.Errorf("prune intent rebroadcast %d times, want queued once", got)
	}
}
