package agent

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/cairndns/cairn/rpc"
)

// This file connects network coordinates to the door: the loop that sends
// this agent's LAN coordinate to the servers, and, on a server, the
// Coordinate endpoint's view of the WAN pool.

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

// syncCoordinates sends this agent's LAN coordinate to the servers, first
// after half to all of SyncIntervalMin (a few probe rounds have moved it by
// then), then every coordinateInterval, until ctx ends. A failed send is
// not retried early: the next one carries a newer coordinate anyway.
func (a *Agent) syncCoordinates(ctx context.Context) {
	min := a.cfg.Coordinates.SyncIntervalMin
	wait := min/2 + rand.N(min/2+1)
	failing := false
	for {
		if !clock.Sleep(ctx, wait) {
			return
		}
		wait = coordinateInterval(min, len(a.gossip.Members()))
		c, ok := a.gossip.Coordinate()
		if !ok {
			return
		}
		err := a.sendCoordinate(ctx, c)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			// Once per failing streak: while the servers are away every
			// send fails, and the agent says so elsewhere already.
			a.logger.Warn("sending this node's network coordinate failed; will retry", "node", a.cfg.NodeName, "retry_in", wait, "err", err)
			failing = true
		case err == nil && failing:
			a.logger.Info("sending this node's network coordinate works again", "node", a.cfg.NodeName)
			failing = false
		}
	}
}

// sendCoordinate sends c as this node's coordinate, with the agent's token.
func (a *Agent) sendCoordinate(ctx context.Context, c gossip.Coordinate) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	args := &rpc.CoordinateUpdateRequest{
		WriteRequest: rpc.WriteRequest{Datacenter: a.cfg.Datacenter},
		Node:         a.cfg.NodeName,
		Coord:        &catalog.Coordinate{Vec: c.Vec, Error: c.Error, Adjustment: c.Adjustment, Height: c.Height},
	}
	lc := a.localCatalog()
	return lc.door.RPC(lc.withToken(ctx), rpc.MethodCoordinateUpdate, args, nil)
}

// newCoordinateEndpoint builds a server's Coordinate endpoint, with the
// batching knobs of the configuration and the WAN pool, which starts
// after the endpoints are registered (wan.go), read when asked.
func (a *Agent) newCoordinateEndpoint() (*consensus.Coordinate, error) {
	cc := consensus.DefaultCoordinateConfig()
	cc.UpdatePeriod = a.cfg.Coordinates.UpdatePeriod
	cc.BatchSize = a.cfg.Coordinates.UpdateBatchSize
	cc.MaxBatches = a.cfg.Coordinates.UpdateMaxBatches
	cc.WAN = wanView{&a.peers.wan}
	return consensus.NewCoordinate(a.catalogEP, cc, a.logger)
}

// wanView is the WAN pool as the Coordinate endpoint reads it: empty until
// the pool has started.
type wanView struct {
	pool interface{ Load() *gossip.Pool }
}

var _ consensus.WANCoordinates = wanView{}

func (w wanView) Members() []gossip.Member {
	if p := w.pool.Load(); p != nil {
		return p.Members()
	}
	return nil
}

func (w wanView) LocalMember() gossip.Member {
	if p := w.pool.Load(); p != nil {
		return p.LocalMember()
	}
	return gossip.Member{}
}

func (w wanView) Coordinate() (gossip.Coordinate, bool) {
	if p := w.pool.Load(); p != nil {
		return p.Coordinate()
	}
	return gossip.Coordinate{}, false
}

func (w wanView) PeerCoordinates() map[string]gossip.Coordinate {
	if p := w.pool.Load(); p != nil {
		return p.PeerCoordinates()
	}
	return nil
}
