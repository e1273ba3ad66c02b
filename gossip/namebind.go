package gossip

import (
	"fmt"
	"strings"
	"time"
)

// heldName refuses, on the LAN, a peer gossiping a node name with node ID
// id while the pool keeps a failed member of that name (compared as
// strings.EqualFold does) with another ID, or with one where id is ""
// (a peer cannot shed the binding by gossiping none). A node's name stays bound to
// its ID until the pool forgets the failed member (RetainDead: the
// agent's reconnect_timeout) or the member leaves: otherwise whoever holds
// the gossip key could start an agent under a dead node's name, and the
// leader would move that node, with its services, to the newcomer's
// address. Without this, memberlist alone lets a new address take a dead
// node's name once it forgets the node (GossipToTheDead, 30s on the LAN).
// It runs on memberlist's receive path, which it must not block: p.mu is
// held only for the lookup.
func (p *Pool) heldName(name, id string) error {
	if p.cfg.Pool != LAN {
		return nil
	}
	p.mu.Lock()
	var held Member
	for _, m := range p.lookup(p.index.byNode[foldKey(name)]) {
		if m.Status == StatusFailed && m.ID != "" && !strings.EqualFold(m.ID, id) && m.Name != p.name {
			held = m
			break
		}
	}
	p.mu.Unlock()
	if held.Name == "" {
		return nil
	}
	p.conflicts.Add(1)
	return fmt.Errorf("%w: node name %q is held by the failed node %s (node ID %s, failed %s ago) until it is forgotten after reconnect_timeout; "+
		"a replacement of that node starts with its node_id, any other agent with another node_name",
		ErrIncompatiblePeer, name, held.Addr, held.ID, time.Since(held.Since).Round(time.Second))
}
