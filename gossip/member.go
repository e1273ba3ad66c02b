package gossip

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
)

// Status is what the pool last learned about a member.
type Status int

const (
	// StatusAlive: the member answers probes. memberlist reports no event
	// when it merely suspects a member, so a suspect member stays Alive
	// until it is declared failed or refutes the suspicion.
	StatusAlive Status = iota + 1
	// StatusFailed: the member stopped answering and did not refute the
	// suspicion in time (memberlist's StateDead). It may come back.
	StatusFailed
	// StatusLeft: the member left with Pool.Leave (memberlist's StateLeft).
	// Its leave intent may arrive after memberlist reported it gone, so a
	// member can turn from Failed to Left, never the other way.
	StatusLeft
	// StatusIncompatible: a peer refused for its protocol version, never a
	// member (Pool.Incompatible lists them; Pool.Members never does).
	StatusIncompatible
)

func (s Status) String() string {
	switch s {
	case StatusAlive:
		return "alive"
	case StatusFailed:
		return "failed"
	case StatusLeft:
		return "left"
	case StatusIncompatible:
		return "incompatible"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Member is one member of a pool as this pool last saw it. It is a value:
// snapshots never change after they are returned.
type Member struct {
	// Name is the memberlist name: the node name on the LAN, "<node>.<dc>"
	// on the WAN.
	Name string
	// Node is the agent's node name (Name without ".<dc>" on the WAN).
	Node string
	// Addr and Port are the member's gossip address.
	Addr netip.Addr
	Port uint16
	// Status is alive, failed or left; Since is when this pool saw it
	// change to that status (local clock).
	Status Status
	Since  time.Time
	// Role, Datacenter, RPCAddr and ProtocolVersion come from the member's
	// metadata. A member whose metadata does not decode is refused by the
	// pool and never appears.
	Role            Role
	Datacenter      string
	RPCAddr         string
	ProtocolVersion uint8
	// WANPort is a LAN member's WAN gossip port (servers), 0 when unknown.
	WANPort uint16
	// ID is the member's node ID and Build its "<version>:<revision>",
	// "" when unknown; ProtocolMin and ProtocolMax the range of protocol
	// versions it speaks, 0 when unknown.
	ID, Build                string
	ProtocolMin, ProtocolMax uint8
	// Refused says why a StatusIncompatible peer was refused; "" for a
	// member.
	Refused string
	// Features are what the member can do that older members cannot: 0
	// for a member older than Features.
	Features Features
}

// Features is a set of abilities a member announces in its metadata, so
// that others use one only once every member concerned has it.
type Features uint8

const (
	// FeatureBatchedWrites: the server reads Raft log entries that batch
	// several writes (consensus's group commit).
	FeatureBatchedWrites Features = 1 << iota
	// FeatureBatchedForwards: the server takes rpc.BatchMethod, the
	// writes a follower forwards together.
	FeatureBatchedForwards
)

// features are this build's.
const features = FeatureBatchedWrites | FeatureBatchedForwards

// Has reports whether f includes every feature of want.
func (f Features) Has(want Features) bool { return f&want == want }

// IsServer reports whether the member is a server.
func (m Member) IsServer() bool { return m.Role == RoleServer }

// memberOf builds a Member from memberlist's node, which must not be kept.
func memberOf(kind Kind, n *memberlist.Node, md meta, status Status, now time.Time) Member {
	addr, _ := netip.AddrFromSlice(n.Addr)
	node := n.Name
	if kind == WAN {
		node = strings.TrimSuffix(n.Name, "."+md.Datacenter)
	}
	return Member{
		Name:            n.Name,
		Node:            node,
		Addr:            addr.Unmap(),
		Port:            n.Port,
		Status:          status,
		Since:           now,
		Role:            md.Role,
		Datacenter:      md.Datacenter,
		RPCAddr:         md.RPCAddr,
		ProtocolVersion: md.ProtocolVersion,
		WANPort:         md.WANPort,
		ID:              md.NodeID,
		Build:           md.Build,
		ProtocolMin:     md.ProtocolMin,
		ProtocolMax:     md.ProtocolMax,
		Features:        md.Features,
	}
}
