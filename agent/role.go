package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/internal/clock"
)

// role is what a server does and a client does not, set once by New so
// the lifecycle never asks which it is.
type role interface {
	start(loopCtx context.Context) error // server.go, client.go
	leaveRaft(ctx context.Context) error // after the gossip leave
	// leaderKnown returns the "leader known" milestone's attributes once
	// it is reached.
	leaderKnown(synced bool) ([]any, bool)
	// In shutdown: closeWaits first, stopRPC after gossip, stopRaft last.
	closeWaits()
	stopRPC(ctx context.Context) error
	stopRaft() error
	addStats(out map[string]map[string]string) // to the consul section and beyond (self.go)
}

var (
	_ role = serverRole{}
	_ role = clientRole{}
)

// clientRole is a client's: it runs no Raft and no server port.
type clientRole struct{ a *Agent }

func (r clientRole) start(loopCtx context.Context) error { return r.a.startClient(loopCtx) }

func (clientRole) leaveRaft(context.Context) error { return nil }

// leaderKnown: a client's first write went through, which needs a leader.
func (clientRole) leaderKnown(synced bool) ([]any, bool) {
	return []any{"through", "the first write to the catalog"}, synced
}

func (clientRole) closeWaits()                   {}
func (clientRole) stopRPC(context.Context) error { return nil }
func (clientRole) stopRaft() error               { return nil }

// serverRole is a server's: the parts startServer built, in the agent.
// Start may have failed part way, so the stop methods stop what exists.
type serverRole struct{ a *Agent }

func (r serverRole) start(loopCtx context.Context) error { return r.a.startServer(loopCtx) }

func (r serverRole) leaderKnown(bool) ([]any, bool) {
	l := r.a.server.Leader()
	return []any{"leader", l}, l != ""
}

func (r serverRole) closeWaits() {
	if r.a.endpoints != nil {
		r.a.endpoints.Catalog.Close()
	}
}

func (r serverRole) stopRPC(ctx context.Context) error {
	if r.a.rpcServer == nil {
		return nil
	}
	if err := r.a.rpcServer.Shutdown(ctx); err != nil {
		return fmt.Errorf("rpc server shutdown: %w", err)
	}
	return nil
}

func (r serverRole) stopRaft() error {
	if r.a.server == nil {
		return nil
	}
	return r.a.server.Shutdown()
}

// leaveRaft takes this server out of the Raft configuration: a leader
// removes itself (and steps down once that commits); a follower waits for
// the leader, which saw the gossip leave, to remove it. The last voter
// stays: there is no one to hand the catalog to.
func (r serverRole) leaveRaft(ctx context.Context) error {
	a := r.a
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	me := a.server.ID()
	for {
		peers, err := a.server.Peers()
		if err != nil {
			return nil // Raft already stopped: removed, or shutting down
		}
		in, voters := false, 0
		for _, p := range peers {
			in = in || p.ID == me
			if p.Voter {
				voters++
			}
		}
		if !in || voters <= 1 {
			return nil
		}
		if a.server.IsLeader() {
			err := a.server.RemoveServer(ctx, me)
			if err == nil || errors.Is(err, consensus.ErrLastVoter) {
				return nil
			}
			a.logger.Warn("removing this server from raft", "err", err)
		}
		if !clock.Sleep(ctx, 100*time.Millisecond) {
			a.logger.Warn("left gossip but is still in the raft configuration; the leader will remove it", "err", ctx.Err())
			return nil
		}
	}
}
