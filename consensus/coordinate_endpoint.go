package consensus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// CoordinateConfig configures the Coordinate endpoint. The batching knobs
// are Consul's (coordinate_update_period, coordinate_update_batch_size,
// coordinate_update_max_batches) and keep its defaults: at most
// BatchSize × MaxBatches updates per UpdatePeriod reach Raft, one entry per
// BatchSize, however many agents send theirs.
type CoordinateConfig struct {
	// UpdatePeriod is how often the leader writes the updates it queued.
	// Default 5s.
	UpdatePeriod time.Duration
	// BatchSize is how many updates one Raft entry carries. Default 128.
	BatchSize int
	// MaxBatches is how many entries one period may write; an update
	// arriving while BatchSize × MaxBatches others wait is refused
	// (rpc.ErrRateLimited) and the agent sends it again later. Default 5.
	MaxBatches int
	// WAN is this server's WAN pool, whose coordinates ListDatacenters
	// reports and NearestDatacenters sorts by. Nil (a server in no WAN
	// pool, unit tests) reports none. Default nil.
	WAN WANCoordinates
}

// WANCoordinates is what the endpoint needs of the WAN gossip pool
// (*gossip.Pool): its members and the coordinates learnt from probing
// them.
type WANCoordinates interface {
	Members() []gossip.Member
	LocalMember() gossip.Member
	Coordinate() (gossip.Coordinate, bool)
	PeerCoordinates() map[string]gossip.Coordinate
}

// DefaultCoordinateConfig returns Consul's defaults.
func DefaultCoordinateConfig() CoordinateConfig {
	return CoordinateConfig{UpdatePeriod: 5 * time.Second, BatchSize: 128, MaxBatches: 5}
}

// Validate reports every invalid field.
func (c CoordinateConfig) Validate() error {
	var errs []error
	if c.UpdatePeriod <= 0 {
		errs = append(errs, fmt.Errorf("consensus coordinate UpdatePeriod: must be positive, got %s", c.UpdatePeriod))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("consensus coordinate BatchSize: must be at least 1, got %d", c.BatchSize))
	}
	if c.MaxBatches < 1 {
		errs = append(errs, fmt.Errorf("consensus coordinate MaxBatches: must be at least 1, got %d", c.MaxBatches))
	}
	return errors.Join(errs...)
}

// Coordinate is the RPC endpoint of network coordinates (Consul's
// Coordinate). Agents send their LAN coordinate with Update, which is
// forwarded to the leader; the leader queues it and Run writes the queue
// to Raft once per UpdatePeriod, so that a coordinate every few seconds
// from every node costs a few log entries, not one per node. Reads are
// blocking queries like the catalog's. It rides on a Catalog endpoint of
// the same server; register it under rpc.CoordinateEndpoint and run Run
// in a goroutine the server owns.
//
// With ACLs on, an update needs node:write on its node, and reads answer
// only the nodes the token may read (node:read).
type Coordinate struct {
	cat    *Catalog
	cfg    CoordinateConfig
	logger *slog.Logger

	mu      sync.Mutex
	pending map[string]catalog.CoordinateEntry // by lowercased node name, the latest update of each
}

// NewCoordinate returns the Coordinate endpoint riding on cat.
func NewCoordinate(cat *Catalog, cfg CoordinateConfig, logger *slog.Logger) (*Coordinate, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Coordinate{cat: cat, cfg: cfg, logger: logger.With("component", "coordinate"),
		pending: make(map[string]catalog.CoordinateEntry)}, nil
}

// Update queues a node's coordinate on the leader; it returns once
// queued, and the coordinate is readable after the next batch is applied
// (within UpdatePeriod).
func (e *Coordinate) Update(ctx context.Context, args *rpc.CoordinateUpdateRequest, _ *struct{}) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if done, err := e.cat.forwardDC(ctx, rpc.MethodCoordinateUpdate, args.Datacenter, &args.FromDatacenter, true, args, &struct{}{}, 0); done {
		return err
	}
	if err := catalog.ValidateNodeName("Node", args.Node); err != nil {
		return err
	}
	if args.Segment != "" {
		return &catalog.FieldError{Field: "Segment", Reason: "must be empty: cairn has no network segments"}
	}
	if err := catalog.ValidateCoordinate("Coord", args.Coord); err != nil {
		return err
	}
	if done, err := e.cat.forward(ctx, rpc.MethodCoordinateUpdate, &args.Forwarded, args, &struct{}{}, 0); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	if authz != nil && !authz.NodeWrite(args.Node) {
		return denied("node", "write", args.Node)
	}
	return e.enqueue(catalog.CoordinateEntry{Node: args.Node, Coord: args.Coord})
}

// enqueue keeps u as its node's latest pending update, unless the queue is
// full of other nodes' updates.
func (e *Coordinate) enqueue(u catalog.CoordinateEntry) error {
	key := strings.ToLower(u.Node)
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.pending[key]; !ok && len(e.pending) >= e.cfg.BatchSize*e.cfg.MaxBatches {
		return fmt.Errorf("coordinate update of node %q: %w: %d updates already wait for the next batch", u.Node, rpc.ErrRateLimited, len(e.pending))
	}
	e.pending[key] = u
	return nil
}

// Run writes the queued updates every UpdatePeriod while this server
// leads, until ctx ends. A server that does not lead drops what it
// queued (it queued it while leading): the agents send theirs again to
// the new leader within their own period.
func (e *Coordinate) Run(ctx context.Context) {
	t := time.NewTicker(e.cfg.UpdatePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.flush(ctx); err != nil && ctx.Err() == nil {
			e.logger.Warn("coordinate batch not applied; agents will send theirs again", "err", err)
		}
	}
}

// flush applies the queued updates in batches of BatchSize, in node
// order (so a test, and a log reader, sees a stable order).
func (e *Coordinate) flush(ctx context.Context) error {
	e.mu.Lock()
	pending := e.pending
	e.pending = make(map[string]catalog.CoordinateEntry, len(pending))
	e.mu.Unlock()
	if len(pending) == 0 || !e.cat.srv.IsLeader() {
		return nil
	}
	updates := make([]catalog.CoordinateEntry, 0, len(pending))
	for _, u := range pending {
		updates = append(updates, u)
	}
	slices.SortFunc(updates, func(a, b catalog.CoordinateEntry) int { return strings.Compare(a.Node, b.Node) })
	for batch := range slices.Chunk(updates, e.cfg.BatchSize) {
		if err := e.cat.srv.apply(ctx, cmdCoordinates, &catalog.CoordinateBatch{Updates: batch}); err != nil {
			return fmt.Errorf("apply %d coordinates: %w", len(batch), err)
		}
	}
	return nil
}

// ListNodes returns every node's coordinate.
func (e *Coordinate) ListNodes(ctx context.Context, args *rpc.CoordinateListRequest, reply *rpc.CoordinatesResponse) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if done, err := e.cat.forwardRead(ctx, rpc.MethodCoordinateListNodes, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return e.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, all, err := e.cat.srv.Store().Coordinates(ws)
		reply.Coordinates, reply.ResultsFilteredByACLs = all, false
		if authz != nil {
			reply.Coordinates = slices.DeleteFunc(slices.Clone(all), func(c *catalog.CoordinateEntry) bool { return !authz.NodeRead(c.Node) })
			reply.ResultsFilteredByACLs = len(reply.Coordinates) < len(all)
		}
		return idx, err
	})
}

// Node returns one node's coordinate (none when it has none).
func (e *Coordinate) Node(ctx context.Context, args *rpc.CoordinateNodeRequest, reply *rpc.CoordinatesResponse) error {
	ctx, release := e.cat.requestContext(ctx)
	defer release()
	if err := catalog.ValidateNodeName("Node", args.Node); err != nil {
		return err
	}
	if done, err := e.cat.forwardRead(ctx, rpc.MethodCoordinateNode, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	authz, err := e.cat.authorize(args.Token)
	if err != nil {
		return err
	}
	return e.cat.query(ctx, args.QueryOptions, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, c, err := e.cat.srv.Store().NodeCoordinate(ws, args.Node)
		reply.Coordinates, reply.ResultsFilteredByACLs = nil, false
		switch {
		case c == nil:
		case authz != nil && !authz.NodeRead(c.Node):
			reply.ResultsFilteredByACLs = true
		default:
			reply.Coordinates = []*catalog.CoordinateEntry{c}
		}
		return idx, err
	})
}

// ListDatacenters returns the WAN coordinates of every datacenter's
// servers, as this server's WAN pool has measured them. It is answered by
// the server asked, from gossip, not from the catalog.
func (e *Coordinate) ListDatacenters(_ context.Context, _ *rpc.DatacentersRequest, reply *rpc.DatacenterCoordinatesResponse) error {
	reply.Datacenters = e.wanCoordinates()
	return nil
}

// wanCoordinates groups the WAN pool's alive members' coordinates by
// datacenter: this server's own, and those its probes learnt. A
// datacenter whose servers have none yet is listed with none. Servers are
// named by node name, without the WAN pool's ".<dc>", as Consul names
// them (its "rtt -wan" looks them up so).
func (e *Coordinate) wanCoordinates() []rpc.DatacenterCoordinates {
	wan := e.cfg.WAN
	if wan == nil {
		return []rpc.DatacenterCoordinates{}
	}
	peers := wan.PeerCoordinates()
	if peers == nil {
		peers = map[string]gossip.Coordinate{} // coordinates disabled
	}
	if own, ok := wan.Coordinate(); ok {
		peers[wan.LocalMember().Name] = own
	}
	byDC := map[string]*rpc.DatacenterCoordinates{}
	for _, m := range wan.Members() {
		if m.Status != gossip.StatusAlive {
			continue
		}
		dc := byDC[m.Datacenter]
		if dc == nil {
			dc = &rpc.DatacenterCoordinates{Datacenter: m.Datacenter, AreaID: "wan", Coordinates: []*catalog.CoordinateEntry{}}
			byDC[m.Datacenter] = dc
		}
		if c, ok := peers[m.Name]; ok {
			dc.Coordinates = append(dc.Coordinates, &catalog.CoordinateEntry{Node: m.Node, Coord: toCatalogCoordinate(c)})
		}
	}
	out := make([]rpc.DatacenterCoordinates, 0, len(byDC))
	for _, dc := range byDC {
		out = append(out, *dc)
	}
	slices.SortFunc(out, func(a, b rpc.DatacenterCoordinates) int { return strings.Compare(a.Datacenter, b.Datacenter) })
	return out
}

func toCatalogCoordinate(c gossip.Coordinate) *catalog.Coordinate {
	return &catalog.Coordinate{Vec: c.Vec, Error: c.Error, Adjustment: c.Adjustment, Height: c.Height}
}
