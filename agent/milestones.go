package agent

import (
	"context"
	"time"

	"github.com/cairndns/cairn/gossip"
)

// milestoneEvery is how often logMilestones looks for the next milestone.
const milestoneEvery = 200 * time.Millisecond

// logMilestones logs, once each and in this order, the steps that make a
// starting agent useful, so that whoever watches its output sees where it
// is: "joined the cluster" (gossip has found a server besides this agent,
// or it is a server meant to be alone), "leader known" (a server knows
// the Raft leader; a client's first write went through, which needs one)
// and "ready" (this node is in the catalog; DNS answers for the cluster).
// The ports were logged with "agent started". It returns once all are
// logged or ctx ends; it looks every milestoneEvery, which costs nothing
// worth counting and ends within moments on a healthy cluster.
func (a *Agent) logMilestones(ctx context.Context) {
	t := time.NewTicker(milestoneEvery)
	defer t.Stop()
	joined, leader := false, false
	for {
		if !joined {
			if members, servers := a.gossipCounts(); servers > 1 || (a.cfg.Server && a.bootstrapExpect() == 1) || (!a.cfg.Server && servers > 0) {
				a.logger.Info("joined the cluster", "members", members, "servers", servers)
				joined = true
			}
		}
		if joined && !leader {
			if attrs, ok := a.role.leaderKnown(isClosed(a.synced)); ok {
				a.logger.Info("leader known", attrs...)
				leader = true
			}
		}
		if joined && leader && isClosed(a.synced) {
			a.logger.Info("ready: this node is in the catalog, DNS answers", "dns", a.dns.UDPAddr().String())
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gossipCounts counts the alive members of the LAN pool, and the servers
// among them.
func (a *Agent) gossipCounts() (members, servers int) {
	for _, m := range a.gossip.Members() {
		if m.Status != gossip.StatusAlive {
			continue
		}
		members++
		if m.IsServer() {
			servers++
		}
	}
	return members, servers
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
