package catalog_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

func coord(height float64, vec ...float64) *catalog.Coordinate {
	v := make([]float64, catalog.CoordinateDimensionality)
	copy(v, vec)
	return &catalog.Coordinate{Vec: v, Error: 1.5, Height: height}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	a := coord(0.001, 0.003)
	b := coord(0.002, 0, 0.004)
	for _, tc := range []struct {
		name   string
		a, b   *catalog.Coordinate
		want   time.Duration
		wantOK bool
	}{
		// 3-4-5 triangle: 5ms, plus the heights 1ms and 2ms.
		{"euclid plus heights", a, b, 8 * time.Millisecond, true},
		{"symmetric", b, a, 8 * time.Millisecond, true},
		{"self is both heights", a, a, 2 * time.Millisecond, true},
		{"adjustments added", &catalog.Coordinate{Vec: a.Vec, Height: a.Height, Adjustment: 0.001},
			&catalog.Coordinate{Vec: b.Vec, Height: b.Height, Adjustment: 0.0005}, 9500 * time.Microsecond, true},
		// Adjustments that would make the estimate non-positive are
		// ignored: the raw estimate stands.
		{"negative adjustment ignored", &catalog.Coordinate{Vec: a.Vec, Height: a.Height, Adjustment: -0.005},
			&catalog.Coordinate{Vec: b.Vec, Height: b.Height, Adjustment: -0.005}, 8 * time.Millisecond, true},
		{"nil", a, nil, 0, false},
		{"other dimensions", a, &catalog.Coordinate{Vec: []float64{1}}, 0, false},
	} {
		got, ok := catalog.Distance(tc.a, tc.b)
		if ok != tc.wantOK || (ok && (got-tc.want).Abs() > time.Microsecond) {
			t.Errorf("%s: got %s, %v; want %s, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestValidateCoordinate(t *testing.T) {
	t.Parallel()
	nan := coord(1e-5)
	nan.Vec[3] = math.NaN()
	inf := coord(1e-5)
	inf.Height = math.Inf(1)
	for _, tc := range []struct {
		c         *catalog.Coordinate
		wantField string
	}{
		{coord(1e-5, 0.1), ""},
		{nil, "Coord"},
		{&catalog.Coordinate{Vec: []float64{1, 2}}, "Coord.Vec"},
		{nan, "Coord.Vec[3]"},
		{inf, "Coord.Height"},
	} {
		err := catalog.ValidateCoordinate("Coord", tc.c)
		var fe *catalog.FieldError
		switch {
		case tc.wantField == "" && err != nil:
			t.Errorf("got %v, want no error", err)
		case tc.wantField != "" && (!errors.As(err, &fe) || fe.Field != tc.wantField):
			t.Errorf("got %v, want a FieldError naming %s", err, tc.wantField)
		}
	}
}

func TestSortByDistance(t *testing.T) {
	t.Parallel()
	coords := map[string]*catalog.Coordinate{
		"far":  coord(1e-5, 0.050),
		"near": coord(1e-5, 0.001),
		"mid":  coord(1e-5, 0.010),
		"odd":  {Vec: []float64{1}}, // other dimensions: not comparable
	}
	items := []string{"none1", "Far", "odd", "mid", "none2", "near"}
	catalog.SortByDistance(items, coord(1e-5), coords, func(s string) string { return s })
	want := []string{"near", "mid", "Far", "none1", "odd", "none2"}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("got %v, want %v", items, want)
	}
	// No origin: left alone.
	items = []string{"far", "near"}
	catalog.SortByDistance(items, nil, coords, func(s string) string { return s })
	if items[0] != "far" {
		t.Errorf("without an origin got %v, want the order unchanged", items)
	}
}

func TestCoordinatesStore(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	mustRegister(t, s, 1, svcReq("node1", "10.0.0.1", "web-1", "web"))
	mustRegister(t, s, 2, svcReq("Node2", "10.0.0.2", "web-2", "web"))
	before := s.ChangesSince(nil, 2)

	ws := catalog.NewWatchSet()
	if _, all, err := s.Coordinates(ws); err != nil || len(all) != 0 {
		t.Fatalf("empty store: got %v, %v; want none", all, err)
	}
	feed := catalog.NewWatchSet()
	s.ChangesSince(feed, 2)
	batch := &catalog.CoordinateBatch{Updates: []catalog.CoordinateEntry{
		{Node: "node1", Coord: coord(1e-5, 0.001)},
		{Node: "node2", Coord: coord(1e-5, 0.002)}, // the node's own spelling is kept
		{Node: "ghost", Coord: coord(1e-5, 0.003)}, // no such node: skipped
	}}
	if err := s.ApplyCoordinates(3, batch); err != nil {
		t.Fatalf("ApplyCoordinates: %v", err)
	}
	if ws.Watch(time.After(time.Second)) {
		t.Errorf("a coordinate write did not wake a watcher of the coordinates")
	}
	// The change feed does not move: agents' DNS caches must not refetch
	// because of coordinates.
	if !feed.Watch(time.After(50 * time.Millisecond)) {
		t.Errorf("a coordinate write woke the change feed")
	}
	if c := s.ChangesSince(nil, 2); c.Index != before.Index || len(c.Services)+len(c.Nodes) != 0 {
		t.Errorf("change feed after a coordinate write: got %+v, want nothing new", c)
	}
	if got := s.Index(); got != 2 {
		t.Errorf("catalog index after a coordinate write: got %d, want 2", got)
	}
	idx, all, err := s.Coordinates(nil)
	if err != nil || idx != 3 || len(all) != 2 || all[0].Node != "Node2" || all[1].Node != "node1" {
		t.Fatalf("Coordinates: got %d %+v %v; want index 3, Node2 and node1", idx, all, err)
	}
	_, e, err := s.NodeCoordinate(nil, "NODE1")
	if err != nil || e == nil || e.Coord.Vec[0] != 0.001 {
		t.Fatalf("NodeCoordinate(NODE1): got %+v, %v", e, err)
	}

	// A snapshot keeps them.
	d, err := s.Dump()
	if err != nil {
		t.Fatal(err)
	}
	s2 := newStore(t)
	if err := s2.Restore(d); err != nil {
		t.Fatal(err)
	}
	if _, all2, _ := s2.Coordinates(nil); !reflect.DeepEqual(all2, all) {
		t.Errorf("after restore got %+v, want %+v", all2, all)
	}

	// Deleting a node deletes its coordinate.
	mustDeregister(t, s, 4, &catalog.DeregisterRequest{Node: "node1"})
	idx, all, _ = s.Coordinates(nil)
	if idx != 4 || len(all) != 1 || all[0].Node != "Node2" {
		t.Errorf("after deregistering node1: got %d %+v, want index 4 and Node2 only", idx, all)
	}
	m, err := s.CoordinateMap()
	if err != nil || m["node2"] == nil || len(m) != 1 {
		t.Errorf("CoordinateMap: got %v, %v; want node2 only", m, err)
	}
}
