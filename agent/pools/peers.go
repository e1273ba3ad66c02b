package pools

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// Peers is what a server knows of who may talk to it: the members of its
// LAN pool (agents of its datacenter) and of its WAN pool (servers of all
// datacenters). The rpc server and the endpoints start before the pools
// (gossip carries the server's address), so the pools are published here
// as they start and read from the connections' goroutines; until then
// Peers knows nobody.
type Peers struct {
	lan atomic.Pointer[gossip.Pool]
	wan atomic.Pointer[gossip.Pool]
	dc  string
}

// NewPeers returns the peers of a server of datacenter dc, nobody yet.
func NewPeers(dc string) *Peers { return &Peers{dc: dc} }

// MembersByNode finds members of the LAN pool for the Catalog endpoint's
// node-owner check (consensus.MemberFinder).
func (p *Peers) MembersByNode(node string) []gossip.Member {
	if pool := p.lan.Load(); pool != nil {
		return pool.MembersByNode(node)
	}
	return nil
}

// MembersByID finds members of the LAN pool by node ID.
func (p *Peers) MembersByID(id string) []gossip.Member {
	if pool := p.lan.Load(); pool != nil {
		return pool.MembersByID(id)
	}
	return nil
}

// Admit decides whether a connection to the server port may go on, until
// TLS says who is at the other end: Raft only from an alive server of this
// datacenter in LAN gossip, RPC from an alive member of either pool (LAN
// agents, and the servers of other datacenters forwarding requests). A
// forged Raft message from elsewhere on the network is then refused
// before Raft reads it. Loopback is no exception: agents in tests and
// several agents on one machine are told apart by address, and an agent
// talks to itself in process, not over the port.
func (p *Peers) Admit(remote net.Addr, kind byte) error {
	tcp, ok := remote.(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("not a TCP peer: %s", remote)
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return fmt.Errorf("bad peer address %s", remote)
	}
	ip = ip.Unmap()
	if pool := p.lan.Load(); pool != nil {
		for _, m := range pool.MembersAt(ip) {
			if m.Status != gossip.StatusAlive {
				continue
			}
			if kind == rpc.RPCByte || (m.Role == gossip.RoleServer && m.Datacenter == p.dc) {
				return nil
			}
		}
	}
	if kind == rpc.RPCByte {
		if pool := p.wan.Load(); pool != nil {
			for _, m := range pool.MembersAt(ip) {
				if m.Status == gossip.StatusAlive {
					return nil
				}
			}
		}
	}
	if kind == rpc.RaftByte {
		return fmt.Errorf("raft from %s: not an alive server of datacenter %s in LAN gossip", ip, p.dc)
	}
	return fmt.Errorf("rpc from %s: not an alive member of the LAN or WAN pool", ip)
}

// SourceAddr is the address this agent's connections to servers leave
// from, so that the server, admitting by address, sees the one gossip
// knows: the bind address when it is one, else the advertised address
// when it belongs to this host, else the system's choice.
func SourceAddr(bind, advertise string) string {
	if ip, err := netip.ParseAddr(bind); err == nil && !ip.IsUnspecified() {
		return ip.String()
	}
	adv, err := netip.ParseAddr(advertise)
	if err != nil {
		return ""
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == adv {
			return adv.String()
		}
	}
	return ""
}

// IsServer reports whether remote is the address of an alive server in
// the LAN or WAN pool: servers forward their clients' writes, which were
// limited where they entered, so the write rate limit leaves them alone.
func (p *Peers) IsServer(remote net.Addr) bool {
	tcp, ok := remote.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	for _, pool := range []*gossip.Pool{p.lan.Load(), p.wan.Load()} {
		if pool == nil {
			continue
		}
		for _, m := range pool.MembersAt(ip) {
			if m.Role == gossip.RoleServer && m.Status == gossip.StatusAlive {
				return true
			}
		}
	}
	return false
}

// GossipKeys returns the LAN pool's gossip encryption keys, primary
// first: the servers seal the DNSSEC key with them at rest. None before
// the pool starts (the leader and the endpoint that need them run only
// after it has) or without gossip encryption.
func (p *Peers) GossipKeys() [][]byte {
	pool := p.lan.Load()
	if pool == nil {
		return nil
	}
	var out [][]byte
	for _, k := range pool.LocalKeys() {
		if raw, err := gossip.ParseKey(k); err == nil {
			out = append(out, raw)
		}
	}
	return out
}

// WAN is the WAN pool as the Coordinate endpoint reads it
// (consensus.WANCoordinates): empty until the pool has started.
func (p *Peers) WAN() WANView { return WANView{p: p} }

// WANView is the WAN pool through Peers.
type WANView struct{ p *Peers }

func (w WANView) Members() []gossip.Member {
	if p := w.p.wan.Load(); p != nil {
		return p.Members()
	}
	return nil
}

func (w WANView) LocalMember() gossip.Member {
	if p := w.p.wan.Load(); p != nil {
		return p.LocalMember()
	}
	return gossip.Member{}
}

func (w WANView) Coordinate() (gossip.Coordinate, bool) {
	if p := w.p.wan.Load(); p != nil {
		return p.Coordinate()
	}
	return gossip.Coordinate{}, false
}

func (w WANView) PeerCoordinates() map[string]gossip.Coordinate {
	if p := w.p.wan.Load(); p != nil {
		return p.PeerCoordinates()
	}
	return nil
}
