package agent

import (
	"context"
	"time"
)

// leaveTimeout bounds each step of a graceful leave: broadcasting it in
// gossip, and on a server leaving the Raft configuration.
const leaveTimeout = 5 * time.Second

// leaveAndStop leaves the cluster gracefully and tells Run to shut the
// agent down (PUT /v1/agent/leave).
func (a *Agent) leaveAndStop(ctx context.Context) error {
	err := a.leave(ctx)
	a.leaveOnce.Do(func() { close(a.left) })
	return err
}

// Left is closed once the agent left the cluster through the HTTP API
// (PUT /v1/agent/leave); its owner should then shut it down. Run does.
func (a *Agent) Left() <-chan struct{} { return a.left }

// leave announces this agent's leave in gossip, so the others see it left
// rather than failed (and the leader deregisters its node; the other
// datacenters stop routing to a server at once), and takes a server out of
// the Raft configuration so the remaining servers' quorum does not count
// it. It is done once: later calls return the first one's result.
func (a *Agent) leave(ctx context.Context) error {
	a.leaveDo.Do(func() {
		if a.pools == nil { // Start failed before gossip
			return
		}
		a.logger.Info("leaving the cluster")
		if a.leaveErr = a.pools.Leave(); a.leaveErr != nil {
			return
		}
		a.leaveErr = a.role.leaveRaft(ctx)
	})
	return a.leaveErr
}
