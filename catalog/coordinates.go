package catalog

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"
)

// This file holds the network coordinates of nodes: Vivaldi coordinates
// computed from gossip round trips (package gossip), which agents send to
// the servers and the servers keep here, to estimate the round trip time
// between any two nodes without measuring it (?near sorting, `cairn rtt`,
// the DNS "near" datacenter, prepared queries' Near and NearestN).
//
// Coordinate writes do not reach the change feed (changes.go): every agent
// sends one every few seconds, and no DNS answer depends on them except
// the "near" ones, which the agents re-sort on a timer of their own.

// CoordinateDimensionality is the number of Euclidean dimensions of a
// coordinate's Vec: serf's default, which every cairn agent uses.
const CoordinateDimensionality = 8

// Coordinate is a node's network coordinate, with Consul's field names:
// all values are in seconds, except Error, which is dimensionless.
type Coordinate struct {
	// Vec is the Euclidean part of the position.
	Vec []float64
	// Error is how confident the node is in its position (lower is
	// better; a new node starts at 1.5).
	Error float64
	// Adjustment is an offset learnt from the node's recent samples that
	// corrects for what the Euclidean model misses.
	Adjustment float64
	// Height models the node's access link to the network's core; it is
	// never below 10µs.
	Height float64
}

// Distance returns the estimated round trip time between the nodes at a
// and b: the Euclidean distance of their Vecs plus both Heights, plus both
// Adjustments unless that would make the estimate non-positive (in which
// case the unadjusted estimate stands, as serf does). ok is false when
// either is nil or their dimensions differ: such nodes cannot be compared.
func Distance(a, b *Coordinate) (d time.Duration, ok bool) {
	if a == nil || b == nil || len(a.Vec) != len(b.Vec) {
		return 0, false
	}
	var sum float64
	for i := range a.Vec {
		diff := a.Vec[i] - b.Vec[i]
		sum += diff * diff
	}
	dist := math.Sqrt(sum) + a.Height + b.Height
	if adjusted := dist + a.Adjustment + b.Adjustment; adjusted > 0 {
		dist = adjusted
	}
	return time.Duration(dist * float64(time.Second)), true
}

// ValidateCoordinate reports the first bad part of c, as a *FieldError
// whose field starts with field ("Coord"): a missing coordinate, a Vec of
// another dimensionality than CoordinateDimensionality, or a component
// that is NaN or infinite.
func ValidateCoordinate(field string, c *Coordinate) error {
	if c == nil {
		return fieldErr(field, "is required")
	}
	if len(c.Vec) != CoordinateDimensionality {
		return fieldErr(field+".Vec", "must have %d dimensions, got %d", CoordinateDimensionality, len(c.Vec))
	}
	for i, v := range c.Vec {
		if reason := badFloat(v); reason != "" {
			return fieldErr(fmt.Sprintf("%s.Vec[%d]", field, i), "%s", reason)
		}
	}
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"Error", c.Error}, {"Adjustment", c.Adjustment}, {"Height", c.Height}} {
		if reason := badFloat(f.v); reason != "" {
			return fieldErr(field+"."+f.name, "%s", reason)
		}
	}
	return nil
}

func badFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "is NaN"
	case math.IsInf(v, 0):
		return "is infinite"
	}
	return ""
}

// CoordinateEntry is a node's coordinate as the store keeps it. Segment is
// Consul's network segment, always "" in cairn (it has none); it is kept
// so that the API's shape is Consul's.
type CoordinateEntry struct {
	Node    string
	Segment string
	Coord   *Coordinate
}

// CoordinateBatch is one Raft entry of coordinate updates: the leader
// collects the updates agents send for a while and applies them together.
type CoordinateBatch struct {
	Updates []CoordinateEntry
}

const tableCoordinates = "coordinates"

func coordinateTables() map[string]*memdb.TableSchema {
	return map[string]*memdb.TableSchema{
		tableCoordinates: {
			Name: tableCoordinates,
			Indexes: map[string]*memdb.IndexSchema{
				// One coordinate per node (cairn has no segments), found
				// case-insensitively as nodes are.
				"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Node", Lowercase: true}},
			},
		},
	}
}

// ApplyCoordinates writes a batch of coordinates at Raft index idx. An
// update for a node the catalog does not hold (deregistered since the
// agent sent it) is skipped, so a coordinate never outlives its node.
// Updates are not validated here: the endpoint did that before they were
// batched, and the FSM must apply whatever the log holds.
func (s *Store) ApplyCoordinates(idx uint64, b *CoordinateBatch) error {
	st := s.state.Load()
	tx := st.db.Txn(true)
	defer tx.Abort()
	wrote := false
	for _, u := range b.Updates {
		if u.Coord == nil {
			continue
		}
		raw, err := tx.First(tableNodes, "id", u.Node)
		if err != nil {
			return fmt.Errorf("look up node %q: %w", u.Node, err)
		}
		n, ok := raw.(*Node)
		if !ok {
			continue
		}
		c := *u.Coord
		c.Vec = slices.Clone(u.Coord.Vec)
		// The node's own spelling, so that a list reads like the nodes'.
		if err := tx.Insert(tableCoordinates, &CoordinateEntry{Node: n.Node, Segment: u.Segment, Coord: &c}); err != nil {
			return fmt.Errorf("insert coordinate of node %q: %w", u.Node, err)
		}
		wrote = true
	}
	if wrote {
		if err := bumpIndex(tx, tableCoordinates, idx); err != nil {
			return err
		}
	}
	// Not st.commit: coordinates are no name's answer, so the change log
	// gets no entry (see the top of this file).
	tx.Commit()
	return nil
}

// deleteCoordinate removes a node's coordinate with the node.
func deleteCoordinate(tx *memdb.Txn, idx uint64, node string) error {
	n, err := tx.DeleteAll(tableCoordinates, "id", node)
	if err != nil {
		return fmt.Errorf("delete coordinate of node %q: %w", node, err)
	}
	if n > 0 {
		return bumpIndex(tx, tableCoordinates, idx)
	}
	return nil
}

// Coordinates returns every node's coordinate, sorted by node name, and
// the index of the coordinates table.
func (s *Store) Coordinates(ws WatchSet) (uint64, []*CoordinateEntry, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableCoordinates, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list coordinates: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*CoordinateEntry
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*CoordinateEntry))
	}
	slices.SortFunc(out, func(a, b *CoordinateEntry) int { return cmp.Compare(a.Node, b.Node) })
	return maxIndex(tx, tableCoordinates), out, nil
}

// NodeCoordinate returns a node's coordinate (case-insensitive name), or
// nil when it has none.
func (s *Store) NodeCoordinate(ws WatchSet, node string) (uint64, *CoordinateEntry, error) {
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableCoordinates, "id", node)
	if err != nil {
		return 0, nil, fmt.Errorf("look up coordinate of node %q: %w", node, err)
	}
	ws.Add(ch)
	e, _ := raw.(*CoordinateEntry)
	return maxIndex(tx, tableCoordinates), e, nil
}

// CoordinateMap returns every node's coordinate by lowercased node name,
// for sorting by distance.
func (s *Store) CoordinateMap() (map[string]*Coordinate, error) {
	_, all, err := s.Coordinates(nil)
	if err != nil {
		return nil, err
	}
	m := make(map[string]*Coordinate, len(all))
	for _, e := range all {
		m[strings.ToLower(e.Node)] = e.Coord
	}
	return m, nil
}

// SortByDistance sorts items (stably) by the estimated round trip time
// from origin to each item's node, nearest first; items whose node has no
// coordinate (or one of other dimensions) come last, in their order.
// node returns an item's node name; coords is CoordinateMap's. With no
// origin coordinate items are left as they are.
func SortByDistance[T any](items []T, origin *Coordinate, coords map[string]*Coordinate, node func(T) string) {
	if origin == nil || len(items) < 2 {
		return
	}
	dist := make(map[string]time.Duration, len(items))
	for _, it := range items {
		name := strings.ToLower(node(it))
		if _, seen := dist[name]; seen {
			continue
		}
		d, ok := Distance(origin, coords[name])
		if !ok {
			d = -1
		}
		dist[name] = d
	}
	slices.SortStableFunc(items, func(a, b T) int {
		da, db := dist[strings.ToLower(node(a))], dist[strings.ToLower(node(b))]
		switch {
		case da < 0 && db < 0:
			return 0
		case da < 0:
			return 1
		case db < 0:
			return -1
		}
		return cmp.Compare(da, db)
	})
}
