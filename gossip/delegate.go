package gossip

import (
	"cmp"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate gives memberlist this member's metadata and carries the pool's
// own messages in memberlist's gossip: leave intents (intent.go) and
// keyring operations and their replies (keyring_ops.go). It sends no extra
// push/pull state.
type delegate struct {
	p *Pool
}

var _ memberlist.Delegate = delegate{}

// NodeMeta returns the metadata New encoded and each keyring change
// re-encodes; Validate guarantees it fits MetaMaxSize.
func (d delegate) NodeMeta(limit int) []byte {
	if m := d.p.meta.Load(); m != nil {
		return *m
	}
	return nil
}

// NotifyMsg runs on memberlist's packet handler goroutine, or on the
// goroutine of one stream: it must not block. The first byte says what
// the message is; b must not be kept.
func (d delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case msgLeaveIntent, msgPruneIntent:
		d.p.receive(b)
	case msgKeyOp:
		d.p.receiveKeyOp(b)
	case msgKeyReply:
		d.p.receiveKeyReply(b)
	case msgUserEvent:
		d.p.receiveUserEvent(b)
	}
}

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
	// name and id are this member's name and node ID ("" for none): on
	// the LAN, a peer with this ID under another name is refused.
	name, id string
	// held refuses a peer of a name bound to another node ID
	// (Pool.heldName); nil for none.
	held func(name, id string) error
	// min and max are the protocol versions the pool accepts; incompatible
	// is told of each peer refused for its protocol (Pool.refuseProtocol).
	min, max     uint8
	incompatible func(n *memberlist.Node, md meta, err error)
}

var (
	_ memberlist.AliveDelegate = peerFilter{}
	_ memberlist.MergeDelegate = peerFilter{}
)

func (f peerFilter) NotifyAlive(peer *memberlist.Node) error {
	md, err := f.check(peer)
	if err != nil {
		return err
	}
	if err := f.checkID(peer, md); err != nil {
		return err
	}
	return f.checkName(peer, md)
}

// checkName refuses a peer whose name the pool keeps bound to another
// node ID.
func (f peerFilter) checkName(n *memberlist.Node, md meta) error {
	if f.held == nil || f.kind != LAN {
		return nil
	}
	return f.held(n.Name, md.NodeID)
}

// checkID refuses, on the LAN, a peer that has this member's node ID
// under another name.
func (f peerFilter) checkID(n *memberlist.Node, md meta) error {
	if f.kind == LAN && f.id != "" && strings.EqualFold(md.NodeID, f.id) && !strings.EqualFold(n.Name, f.name) {
		return fmt.Errorf("%w: %q has this agent's node ID %s; node IDs must be unique (delete <data_dir>/node-id of one, or set another node_id)",
			ErrIncompatiblePeer, n.Name, md.NodeID)
	}
	return nil
}

// NotifyMerge also refuses, on the LAN, two alive peers with one node ID
// under different names, or one with this member's, as Consul's merge
// delegate does: node IDs identify nodes, and a cluster is joined only
// while they are unique. A dead or left member may share the ID of an
// alive one: a node restarted under a new name.
func (f peerFilter) NotifyMerge(peers []*memberlist.Node) error {
	ids := make(map[string]string, len(peers))
	for _, p := range peers {
		md, err := f.check(p)
		if err != nil {
			return err
		}
		if f.kind != LAN || md.NodeID == "" || p.State != memberlist.StateAlive {
			continue
		}
		if err := f.checkID(p, md); err != nil {
			return err
		}
		if err := f.checkName(p, md); err != nil {
			return err
		}
		if other, ok := ids[md.NodeID]; ok && !strings.EqualFold(other, p.Name) {
			return fmt.Errorf("%w: %q has the node ID %s of member %q; node IDs must be unique",
				ErrIncompatiblePeer, p.Name, md.NodeID, other)
		}
		ids[md.NodeID] = p.Name
	}
	return nil
}

// check decodes a peer's metadata and reports whether it may be a member.
func (f peerFilter) check(n *memberlist.Node) (meta, error) {
	md, err := decodeMeta(n.Meta)
	if err != nil {
		return md, fmt.Errorf("%w: %q: %w", ErrIncompatiblePeer, n.Name, err)
	}
	if lo, hi := md.protocolRange(); hi < f.min || lo > f.max {
		err := fmt.Errorf("%w: %q (build %s) speaks cairn protocol %d (accepts %d–%d), this agent %d–%d",
			ErrIncompatiblePeer, n.Name, cmp.Or(md.Build, "unknown"), md.ProtocolVersion, lo, hi, f.min, f.max)
		if f.incompatible != nil {
			f.incompatible(n, md, err)
		}
		return md, err
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

// conflictDelegate tells the operator about two agents sharing a node
// name: memberlist keeps the member it knew and ignores the other, and
// calls NotifyConflict on every member that sees both (the newcomer
// included, about itself) from its receive path, which must not block.
// One line per name per minute, at ERROR: an agent that cannot be a
// member under its name will not work until someone renames it.
type conflictDelegate struct {
	p *Pool
}

var _ memberlist.ConflictDelegate = conflictDelegate{}

// conflictLogEvery paces the lines about one conflicting name.
const conflictLogEvery = time.Minute

func (d conflictDelegate) NotifyConflict(existing, other *memberlist.Node) {
	d.p.conflicts.Add(1)
	now := time.Now()
	if last, ok := d.p.conflictLogged.Load(existing.Name); ok && now.Sub(last.(time.Time)) < conflictLogEvery {
		return
	}
	d.p.conflictLogged.Store(existing.Name, now)
	if existing.Name == d.p.name {
		d.p.logger.Error("another agent uses this agent's node name: node names must be unique; give one of them another node_name",
			"node", existing.Name, "other", net.JoinHostPort(other.Addr.String(), strconv.Itoa(int(other.Port))))
		return
	}
	d.p.logger.Error("two agents claim one node name: the member known first keeps it, the other is refused",
		"node", existing.Name, "member", net.JoinHostPort(existing.Addr.String(), strconv.Itoa(int(existing.Port))),
		"refused", net.JoinHostPort(other.Addr.String(), strconv.Itoa(int(other.Port))))
}
