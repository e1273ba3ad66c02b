package gossip

import (
	"fmt"
	"strings"

	"github.com/hashicorp/memberlist"
)

// delegate gives memberlist this member's metadata and carries the pool's
// own messages (leave intents, see intent.go) in memberlist's gossip. It
// sends no extra push/pull state.
type delegate struct {
	p    *Pool
	meta []byte // encoded by New; Validate guarantees it fits MetaMaxSize
}

var _ memberlist.Delegate = delegate{}

func (d delegate) NodeMeta(limit int) []byte { return d.meta }

// NotifyMsg runs on memberlist's packet handler goroutine: it must not block.
func (d delegate) NotifyMsg(b []byte) { d.p.receive(b) }

func (d delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.p.broadcasts.GetBroadcasts(overhead, limit)
}

func (delegate) LocalState(bool) []byte            { return nil }
func (delegate) MergeRemoteState(_ []byte, _ bool) {}

// eventDelegate records membership changes in the pool. memberlist calls it
// from its receive loop with its node lock held, never concurrently: it
// must not block and must not call back into memberlist.
type eventDelegate struct {
	p *Pool
}

var _ memberlist.EventDelegate = eventDelegate{}

func (d eventDelegate) NotifyJoin(n *memberlist.Node)   { d.p.observe(n, StatusAlive) }
func (d eventDelegate) NotifyUpdate(n *memberlist.Node) { d.p.observe(n, StatusAlive) }

// NotifyLeave cannot tell a member that left from one that failed:
// memberlist v0.7.0 keeps the state outside the Node it passes, whose State
// stays StateAlive. A leave intent received before or after tells them apart.
func (d eventDelegate) NotifyLeave(n *memberlist.Node) { d.p.observe(n, StatusFailed) }

// peerFilter refuses peers this pool must not gossip with: memberlist calls
// NotifyAlive for every alive message (a refused peer is ignored, and
// memberlist logs why at WARN) and NotifyMerge on every join and push/pull
// (a refused merge fails the Join on both sides). Both are pure checks.
type peerFilter struct {
	kind Kind
	dc   string // the pool's datacenter
}

var (
	_ memberlist.AliveDelegate = peerFilter{}
	_ memberlist.MergeDelegate = peerFilter{}
)

func (f peerFilter) NotifyAlive(peer *memberlist.Node) error {
	_, err := f.check(peer)
	return err
}

func (f peerFilter) NotifyMerge(peers []*memberlist.Node) error {
	for _, p := range peers {
		if _, err := f.check(p); err != nil {
			return err
		}
	}
	return nil
}

// check decodes a peer's metadata and reports whether it may be a member.
func (f peerFilter) check(n *memberlist.Node) (meta, error) {
	md, err := decodeMeta(n.Meta)
	if err != nil {
		return md, fmt.Errorf("%w: %q: %w", ErrIncompatiblePeer, n.Name, err)
	}
	if md.ProtocolVersion < ProtocolVersionMin || md.ProtocolVersion > ProtocolVersionMax {
		return md, fmt.Errorf("%w: %q speaks cairn protocol %d, this agent %d–%d",
			ErrIncompatiblePeer, n.Name, md.ProtocolVersion, ProtocolVersionMin, ProtocolVersionMax)
	}
	switch f.kind {
	case LAN:
		if md.Datacenter != f.dc {
			return md, fmt.Errorf("%w: %q is in datacenter %q, this LAN pool is %q's",
				ErrIncompatiblePeer, n.Name, md.Datacenter, f.dc)
		}
	case WAN:
		if md.Role != RoleServer {
			return md, fmt.Errorf("%w: %q is a %s, the WAN pool holds servers only", ErrIncompatiblePeer, n.Name, md.Role)
		}
		node, ok := strings.CutSuffix(n.Name, "."+md.Datacenter)
		if !ok || validLabel(node) != "" {
			return md, fmt.Errorf("%w: WAN member name %q is not <node>.%s", ErrIncompatiblePeer, n.Name, md.Datacenter)
		}
	}
	return md, nil
}
