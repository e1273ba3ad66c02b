package consensus

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cairndns/cairn/gossip"
)

// The leader's part in the Raft configuration: servers in gossip are
// added (as non-voters for autopilot to promote), those that left are
// removed, and failed ones after RemoveFailedServersAfter as far as the
// quorum allows.

// reconcileServers adds alive servers to the Raft configuration, as
// non-voters for autopilot to promote (a voter whose address changed
// keeps its vote), removes those that left, and then those failed for
// longer than RemoveFailedServersAfter as far as the quorum allows.
func (l *Leader) reconcileServers(ctx context.Context, members []gossip.Member) error {
	peers, err := l.s.Peers()
	if err != nil {
		return err
	}
	inConf := make(map[string]Peer, len(peers))
	for _, p := range peers {
		inConf[p.ID] = p
	}
	servers := make(map[string]gossip.Member)
	var errs []error
	for _, m := range members {
		if !m.IsServer() {
			continue
		}
		id := raftIDOf(m, inConf)
		if id == l.s.ID() || m.Node == l.s.nodeName() {
			continue // the leader is in the configuration; it never removes itself
		}
		servers[id] = m
		p, ok := inConf[id]
		switch {
		case m.Status == gossip.StatusAlive && (!ok || p.Address != m.RPCAddr):
			if l.cfg.VerifyServer != nil {
				if verr := l.cfg.VerifyServer(ctx, m); verr != nil {
					l.warn("verify "+m.Node, "not adding a server that failed verification", "node", m.Node, "addr", m.RPCAddr, "err", verr)
					continue
				}
			}
			err = l.replaceAt(ctx, inConf, id, m.RPCAddr)
			if err == nil {
				err = l.s.AddNonvoter(ctx, id, m.RPCAddr) // keeps a voter a voter
			}
		case m.Status == gossip.StatusLeft && ok:
			err = l.s.RemoveServer(ctx, id)
		default:
			continue
		}
		if err != nil {
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			errs = append(errs, err)
		}
	}
	if err := l.removeFailedServers(ctx, servers); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// replaceAt removes from the configuration the server at addr under
// another ID than id (a server that came back with another node ID, or
// an empty data dir, at the same address), as Consul's leader does before
// adding id: two entries for one server would count its vote twice.
func (l *Leader) replaceAt(ctx context.Context, inConf map[string]Peer, id, addr string) error {
	for _, p := range inConf {
		if p.Address == addr && p.ID != id && p.ID != l.s.ID() {
			l.logger.Info("replacing the raft entry of a server that came back under another ID", "peer", p.ID, "id", id, "addr", addr)
			return l.s.RemoveServer(ctx, p.ID)
		}
	}
	return nil
}

// removeFailedServers removes, oldest failure first, the peers failed (or
// missing from gossip) for longer than RemoveFailedServersAfter, stopping
// at the first removal of a voter the quorum rule forbids (at least
// autopilot's MinQuorum, else MinVoters, voters stay); a non-voter counts
// in no quorum and goes regardless. Nothing is removed while autopilot's
// CleanupDeadServers is off.
func (l *Leader) removeFailedServers(ctx context.Context, servers map[string]gossip.Member) error {
	ap := l.autopilotConfig()
	if !ap.CleanupDeadServers {
		return nil
	}
	minVoters := l.cfg.MinVoters
	if ap.MinQuorum > 0 {
		minVoters = int(ap.MinQuorum)
	}
	peers, err := l.s.Peers()
	if err != nil {
		return err
	}
	now := time.Now()
	type candidate struct {
		id    string
		since time.Time
		voter bool
	}
	var candidates []candidate
	alive, voters := 0, 0
	seen := make(map[string]bool, len(peers))
	for _, p := range peers {
		seen[p.ID] = true
		if p.Voter {
			voters++
		}
		m, known := servers[p.ID]
		switch {
		case p.ID == l.s.ID() || known && m.Status == gossip.StatusAlive:
			delete(l.missingSince, p.ID)
			if p.Voter {
				alive++
			}
			continue
		case known && m.Status == gossip.StatusFailed:
			delete(l.missingSince, p.ID)
			candidates = append(candidates, candidate{p.ID, m.Since, p.Voter})
		case !known:
			since, ok := l.missingSince[p.ID]
			if !ok {
				since = now
				l.missingSince[p.ID] = now
			}
			candidates = append(candidates, candidate{p.ID, since, p.Voter})
		}
	}
	for id := range l.missingSince {
		if !seen[id] {
			delete(l.missingSince, id)
		}
	}
	slices.SortFunc(candidates, func(a, b candidate) int { return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.id, b.id)) })
	for _, c := range candidates {
		if now.Sub(c.since) < l.cfg.RemoveFailedServersAfter {
			continue
		}
		if c.voter && (voters-1 < minVoters || alive <= voters/2) {
			l.warn("keep:"+c.id, "not removing failed server: too few voters would remain",
				"peer", c.id, "voters", voters, "alive", alive, "min_voters", minVoters)
			return nil
		}
		l.logger.Info("removing server failed too long", "peer", c.id, "voter", c.voter, "failed_for", now.Sub(c.since).Round(time.Second))
		if err := l.s.RemoveServer(ctx, c.id); err != nil {
			return err
		}
		delete(l.missingSince, c.id)
		if c.voter {
			voters--
		}
	}
	return nil
}
