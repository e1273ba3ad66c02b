package pools

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/cairndns/cairn/rpc"
)

// This file sends this agent's LAN coordinate to the servers, through
// the door.

// coordinateRateTarget is how many coordinate updates a second the servers
// of a datacenter should receive at most, all agents together (Consul's
// sync_coordinate_rate_target): past SyncIntervalMin × 64 agents, each
// agent's period grows with the cluster.
const coordinateRateTarget = 64

// coordinateInterval is the wait before the next send: the period scaled
// for a cluster of n agents, plus up to that much again of jitter, so that
// agents started together do not send together.
func coordinateInterval(min time.Duration, n int) time.Duration {
	d := max(min, time.Duration(float64(n)/coordinateRateTarget*float64(time.Second)))
	return d + rand.N(d)
}

// CoordinateSync sends the LAN pool's coordinate of this agent to the
// servers.
type CoordinateSync struct {
	// LAN is the pool whose coordinate is sent.
	LAN *gossip.Pool
	// Door reaches the servers; Token returns what the coordinate is
	// sent with at each send (acl.tokens.agent; "" for none).
	Door  door.Door
	Token func() string
	// Datacenter and Node are the agent's.
	Datacenter, Node string
	// SyncIntervalMin is the least time between two sends
	// (coordinates.sync_interval_min).
	SyncIntervalMin time.Duration
	Logger          *slog.Logger
}

// Run sends the coordinate, first after half to all of SyncIntervalMin
// (a few probe rounds have moved it by then), then every
// coordinateInterval, until ctx ends. A failed send is not retried early:
// the next one carries a newer coordinate anyway.
func (s *CoordinateSync) Run(ctx context.Context) {
	min := s.SyncIntervalMin
	wait := min/2 + rand.N(min/2+1)
	failing := false
	for {
		if !clock.Sleep(ctx, wait) {
			return
		}
		wait = coordinateInterval(min, len(s.LAN.Members()))
		c, ok := s.LAN.Coordinate()
		if !ok {
			return
		}
		err := s.send(ctx, c)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			// Once per failing streak: while the servers are away every
			// send fails, and the agent says so elsewhere already.
			s.Logger.Warn("sending this node's network coordinate failed; will retry", "node", s.Node, "retry_in", wait, "err", err)
			failing = true
		case err == nil && failing:
			s.Logger.Info("sending this node's network coordinate works again", "node", s.Node)
			failing = false
		}
	}
}

// send sends c as this node's coordinate.
func (s *CoordinateSync) send(ctx context.Context, c gossip.Coordinate) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	args := &rpc.CoordinateUpdateRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: s.Datacenter},
		Node:         s.Node,
		Coord:        &catalog.Coordinate{Vec: c.Vec, Error: c.Error, Adjustment: c.Adjustment, Height: c.Height},
	}
	if tok := s.Token(); tok != "" {
		ctx = acl.ContextWithToken(ctx, tok)
	}
	return s.Door.RPC(ctx, rpc.MethodCoordinateUpdate, args, nil)
}

// sendTimeout bounds a send.
const sendTimeout = 5 * time.Second
