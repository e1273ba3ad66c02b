package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"time"
)

// Coordinate is the group of /v1/coordinate endpoints: the nodes' network
// coordinates, from which round trip times between nodes are estimated
// without measuring them.
type Coordinate struct{ c *Client }

// Coordinate returns the network coordinate endpoints (/v1/coordinate).
func (c *Client) Coordinate() *Coordinate { return &Coordinate{c: c} }

// NetworkCoordinate is a node's position in a Vivaldi coordinate system
// (Consul's coordinate.Coordinate): values in seconds but Error.
type NetworkCoordinate struct {
	Vec        []float64
	Error      float64
	Adjustment float64
	Height     float64
}

// CoordinateEntry is a node's coordinate. Segment and Partition are
// Consul's, always "" on cairn.
type CoordinateEntry struct {
	Node      string
	Segment   string
	Partition string
	Coord     *NetworkCoordinate
}

// CoordinateDatacenterMap holds the WAN coordinates of one datacenter's
// servers, each by its node name without the WAN pool's ".<dc>" suffix,
// as Consul answers them.
type CoordinateDatacenterMap struct {
	Datacenter  string
	AreaID      string
	Coordinates []CoordinateEntry
}

// Datacenters returns the WAN coordinates of every datacenter's servers:
// GET /v1/coordinate/datacenters.
func (co *Coordinate) Datacenters(ctx context.Context) ([]*CoordinateDatacenterMap, error) {
	var out []*CoordinateDatacenterMap
	if _, err := co.c.do(ctx, request{method: http.MethodGet, path: "/v1/coordinate/datacenters"}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Nodes returns every node's LAN coordinate: GET /v1/coordinate/nodes.
func (co *Coordinate) Nodes(ctx context.Context, q ...*QueryOptions) ([]*CoordinateEntry, *QueryMeta, error) {
	var out []*CoordinateEntry
	meta, err := co.c.do(ctx, request{method: http.MethodGet, path: "/v1/coordinate/nodes", query: firstOptions(q).values(nil)}, &out)
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Node returns a node's LAN coordinate: GET /v1/coordinate/node/<node>.
// A node without one (unknown, or not measured yet) is no entry and no
// error.
func (co *Coordinate) Node(ctx context.Context, node string, q ...*QueryOptions) ([]*CoordinateEntry, *QueryMeta, error) {
	if node == "" {
		return nil, nil, errors.New("coordinate node: node name is empty")
	}
	var out []*CoordinateEntry
	meta, err := co.c.do(ctx, request{method: http.MethodGet, path: "/v1/coordinate/node/" + url.PathEscape(node),
		query: firstOptions(q).values(nil), notFoundOK: true}, &out)
	if errors.Is(err, errNotFound) {
		return nil, meta, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return out, meta, nil
}

// Update sets a node's coordinate: PUT /v1/coordinate/update. The servers
// apply updates in batches, so it is readable within a few seconds.
func (co *Coordinate) Update(ctx context.Context, e *CoordinateEntry, w *WriteOptions) error {
	if e == nil || e.Node == "" {
		return errors.New("coordinate update: node name is empty")
	}
	_, err := co.c.do(ctx, request{method: http.MethodPut, path: "/v1/coordinate/update", query: w.values(nil), body: e}, nil)
	return err
}

// RTT estimates the round trip time between the nodes at a and b: the
// Euclidean distance of their Vecs plus both Heights, plus both
// Adjustments unless that makes it non-positive (as serf computes it). ok
// is false when either is nil or their dimensions differ.
func RTT(a, b *NetworkCoordinate) (rtt time.Duration, ok bool) {
	if a == nil || b == nil || len(a.Vec) != len(b.Vec) {
		return 0, false
	}
	var sum float64
	for i := range a.Vec {
		d := a.Vec[i] - b.Vec[i]
		sum += d * d
	}
	dist := math.Sqrt(sum) + a.Height + b.Height
	if adj := dist + a.Adjustment + b.Adjustment; adj > 0 {
		dist = adj
	}
	return time.Duration(dist * float64(time.Second)), true
}
