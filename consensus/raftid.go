package consensus

import (
	"cmp"
	"fmt"

	"github.com/cairndns/cairn/gossip"
	"github.com/hashicorp/raft"
)

// Raft IDs are node IDs, as Consul's (Config.NodeID). Servers whose data
// dir was written when they were node names keep the name: Raft knows a
// server only by the ID in its configuration, so a server that came back
// under another ID would not count itself a voter, and a cluster whose
// servers all restarted so would have no voter left to elect a leader.
// Such a cluster keeps working under its names; a server that joins it
// anew (an empty data dir) is added by its node ID, and the leader matches
// each member to its entry under either (Leader.raftIDOf).

// ID returns this server's Raft ID.
func (s *Server) ID() string { return s.id }

// nodeName is this server's node name.
func (s *Server) nodeName() string { return cmp.Or(s.cfg.NodeName, s.cfg.NodeID) }

// raftIDOf returns the Raft ID server member m has in inConf (the Raft
// configuration by ID): its node ID, or its node name when an older data
// dir named it so. A member in neither is given its node ID (its name if
// it gossips none, as a release before node IDs did).
func raftIDOf(m gossip.Member, inConf map[string]Peer) string {
	if _, ok := inConf[m.ID]; ok && m.ID != "" {
		return m.ID
	}
	if _, ok := inConf[m.Node]; ok || m.ID == "" {
		return m.Node
	}
	return m.ID
}

// serversByRaftID maps the Raft ID of each server of this datacenter that
// gossip knows to its member, as raftIDOf names it.
func (l *Leader) serversByRaftID() map[string]gossip.Member {
	inConf := map[string]Peer{}
	if peers, err := l.s.Peers(); err == nil {
		for _, p := range peers {
			inConf[p.ID] = p
		}
	}
	out := make(map[string]gossip.Member)
	for _, m := range l.m.Members() {
		if m.IsServer() && m.Datacenter == l.cfg.Datacenter {
			out[raftIDOf(m, inConf)] = m
		}
	}
	return out
}

// raftID picks this server's Raft ID: its node name when the latest Raft
// configuration in its stores names it so, else its node ID. A store it
// cannot read leaves the node ID, and newRaft reports the damage.
func (s *Server) raftID(logs raft.LogStore, snaps raft.SnapshotStore) string {
	name := s.cfg.NodeName
	if name == "" || name == s.cfg.NodeID {
		return s.cfg.NodeID
	}
	conf, err := latestConfiguration(logs, snaps)
	if err != nil {
		s.logger.Debug("could not read the raft configuration to find this server's raft ID", "err", err)
		return s.cfg.NodeID
	}
	for _, srv := range conf.Servers {
		if string(srv.ID) == name {
			s.logger.Info("keeping the raft ID this server has in its configuration, its node name (a data dir from before raft IDs were node IDs)",
				"id", name, "node_id", s.cfg.NodeID)
			return name
		}
	}
	return s.cfg.NodeID
}

// latestConfiguration reads the newest Raft configuration in the stores
// without starting Raft: the last configuration entry of the log, or the
// newest snapshot's when the log holds none after it.
func latestConfiguration(logs raft.LogStore, snaps raft.SnapshotStore) (conf raft.Configuration, err error) {
	defer func() {
		if p := recover(); p != nil { // raft.DecodeConfiguration panics on bad bytes
			err = fmt.Errorf("decode a raft configuration: %v", p)
		}
	}()
	var floor uint64
	metas, err := snaps.List()
	if err != nil {
		return conf, fmt.Errorf("list raft snapshots: %w", err)
	}
	if len(metas) > 0 {
		conf, floor = metas[0].Configuration, metas[0].Index
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return conf, fmt.Errorf("raft log first index: %w", err)
	}
	last, err := logs.LastIndex()
	if err != nil {
		return conf, fmt.Errorf("raft log last index: %w", err)
	}
	for i := last; i > floor && i >= first && i > 0; i-- {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return conf, fmt.Errorf("read raft log %d: %w", i, err)
		}
		if l.Type == raft.LogConfiguration {
			return raft.DecodeConfiguration(l.Data), nil
		}
	}
	return conf, nil
}
