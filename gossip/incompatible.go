package gossip

import (
	"cmp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// A peer refused for the protocol it speaks is no member (memberlist
// ignores it, and a join with it fails on both sides), so nothing else
// would show it: the pool keeps what it learned of the last few such
// peers, for `cairn members` and /v1/agent/members, logs each at ERROR
// once a minute, and counts the refusals (cairn_gossip_incompatible_total).

// incompatibleKeep is how long a refused peer stays listed after it was
// last heard from; incompatibleMax bounds the list, since the peers come
// from the network.
const (
	incompatibleKeep = 10 * time.Minute
	incompatibleMax  = 64
)

// incompatiblePeers is the pool's list of refused peers.
type incompatiblePeers struct {
	refusals atomic.Uint64
	mu       sync.Mutex
	peers    map[string]*incompatiblePeer // by member name
}

type incompatiblePeer struct {
	m      Member // Status StatusIncompatible, Since the first refusal
	last   time.Time
	logged time.Time
}

// refuseProtocol records n, refused by the peer filter for its protocol
// (err says how). It runs on memberlist's receive path: it must not block.
func (p *Pool) refuseProtocol(n *memberlist.Node, md meta, err error) {
	ip := &p.incompatible
	ip.refusals.Add(1)
	now := time.Now()
	ip.mu.Lock()
	if ip.peers == nil {
		ip.peers = map[string]*incompatiblePeer{}
	}
	e := ip.peers[n.Name]
	if e == nil {
		if len(ip.peers) >= incompatibleMax {
			ip.evictOldestLocked()
		}
		e = &incompatiblePeer{}
		ip.peers[n.Name] = e
		e.m = memberOf(p.cfg.Pool, n, md, StatusIncompatible, now)
	} else {
		since := e.m.Since
		e.m = memberOf(p.cfg.Pool, n, md, StatusIncompatible, since)
	}
	e.m.Refused = err.Error()
	e.last = now
	log := now.Sub(e.logged) >= conflictLogEvery
	if log {
		e.logged = now
	}
	ip.mu.Unlock()
	if !log {
		return
	}
	lo, hi := md.protocolRange()
	p.logger.Error("refused a gossip peer of an incompatible protocol version: upgrade or roll back one of them (docs/operating/upgrades.md)",
		"peer", n.Name, "addr", n.Address(), "peer_build", cmp.Or(md.Build, "unknown"),
		"peer_protocol", md.ProtocolVersion, "peer_protocol_min", lo, "peer_protocol_max", hi,
		"build", cmp.Or(p.cfg.Build, "unknown"), "protocol", p.cfg.ProtocolVersion,
		"protocol_min", p.cfg.ProtocolMin, "protocol_max", p.cfg.ProtocolMax, "err", err)
}

func (ip *incompatiblePeers) evictOldestLocked() {
	var oldest string
	var at time.Time
	for name, e := range ip.peers {
		if oldest == "" || e.last.Before(at) {
			oldest, at = name, e.last
		}
	}
	delete(ip.peers, oldest)
}

// forgetIncompatible drops name from the refused peers: it joined, so it
// speaks a protocol this pool accepts now.
func (p *Pool) forgetIncompatible(name string) {
	p.incompatible.mu.Lock()
	delete(p.incompatible.peers, name)
	p.incompatible.mu.Unlock()
}

// Incompatible lists the peers refused for their protocol version in the
// last incompatibleKeep, with status StatusIncompatible and Refused
// saying why. They are not members: Members never lists them.
func (p *Pool) Incompatible() []Member {
	now := time.Now()
	ip := &p.incompatible
	ip.mu.Lock()
	defer ip.mu.Unlock()
	var out []Member
	for name, e := range ip.peers {
		if now.Sub(e.last) > incompatibleKeep {
			delete(ip.peers, name)
			continue
		}
		out = append(out, e.m)
	}
	return out
}

// IncompatibleRefusals counts the times this pool refused a peer for its
// protocol version (each alive message and join of one is refused).
func (p *Pool) IncompatibleRefusals() uint64 { return p.incompatible.refusals.Load() }
