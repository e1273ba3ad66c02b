package compat_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
	"github.com/hashicorp/serf/coordinate"
)

// TestConsulClientCoordinates drives /v1/coordinate and ?near with
// Consul's client: updates, node and datacenter reads, and health and
// catalog reads sorted from the agent and from another node.
func TestConsulClientCoordinates(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Coordinates.UpdatePeriod = 20 * time.Millisecond
	a := agenttest.Start(t, cfg)
	c, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent().ServiceRegister(&consul.AgentServiceRegistration{ID: "web", Name: "web", Port: 80}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		reg := &consul.CatalogRegistration{Node: fmt.Sprintf("n%d", i), Address: fmt.Sprintf("10.0.0.%d", i),
			Service: &consul.AgentService{ID: "web", Service: "web", Port: 80}}
		if _, err := c.Catalog().Register(reg, nil); err != nil {
			t.Fatal(err)
		}
	}
	at := func(x float64) *coordinate.Coordinate {
		cc := coordinate.NewCoordinate(coordinate.DefaultConfig())
		cc.Vec[0] = x
		return cc
	}
	// The agent sits at the origin (alone, its own coordinate never
	// moves), n2 near it, n1 far.
	for node, x := range map[string]float64{"test": 0, "n1": 0.050, "n2": 0.005} {
		if _, err := c.Coordinate().Update(&consul.CoordinateEntry{Node: node, Coord: at(x)}, nil); err != nil {
			t.Fatalf("Coordinate.Update %s: %v", node, err)
		}
	}
	waittest.For(t, 10*time.Second, "three coordinates", func() error {
		all, _, err := c.Coordinate().Nodes(nil)
		if err == nil && len(all) != 3 {
			err = fmt.Errorf("got %d coordinates, want 3", len(all))
		}
		return err
	})
	got, meta, err := c.Coordinate().Node("n1", nil)
	if err != nil || len(got) != 1 || got[0].Node != "n1" || !reflect.DeepEqual(got[0].Coord, at(0.050)) || meta.LastIndex == 0 {
		t.Errorf("Coordinate.Node(n1): got %+v, %+v, %v", got, meta, err)
	}
	dcs, err := c.Coordinate().Datacenters()
	if err != nil || len(dcs) != 1 || dcs[0].Datacenter != "dc1" || dcs[0].AreaID != "wan" ||
		len(dcs[0].Coordinates) != 1 || dcs[0].Coordinates[0].Node != "test" || len(dcs[0].Coordinates[0].Coord.Vec) != 8 {
		t.Errorf("Coordinate.Datacenters: got %+v, %v", dcs, err)
	}
	// serf's own distance agrees with the order the agent sorts by.
	if d1, d2 := at(0).DistanceTo(at(0.050)), at(0).DistanceTo(at(0.005)); d1 <= d2 {
		t.Fatalf("test fixture: n1 at %s, n2 at %s", d1, d2)
	}

	entries, _, err := c.Health().Service("web", "", false, &consul.QueryOptions{Near: "_agent"})
	var nodes []string
	for _, e := range entries {
		nodes = append(nodes, e.Node.Node)
	}
	if want := []string{"test", "n2", "n1"}; err != nil || !slices.Equal(nodes, want) {
		t.Errorf("Health.Service near _agent: got %v, %v; want %v", nodes, err, want)
	}
	svcs, _, err := c.Catalog().Service("web", "", &consul.QueryOptions{Near: "n1"})
	nodes = nodes[:0]
	for _, s := range svcs {
		nodes = append(nodes, s.Node)
	}
	if want := []string{"n1", "n2", "test"}; err != nil || !slices.Equal(nodes, want) {
		t.Errorf("Catalog.Service near n1: got %v, %v; want %v", nodes, err, want)
	}
	ns, _, err := c.Catalog().Nodes(&consul.QueryOptions{Near: "_agent"})
	nodes = nodes[:0]
	for _, n := range ns {
		nodes = append(nodes, n.Node)
	}
	if want := []string{"test", "n2", "n1"}; err != nil || !slices.Equal(nodes, want) {
		t.Errorf("Catalog.Nodes near _agent: got %v, %v; want %v", nodes, err, want)
	}

	// A coordinate the servers refuse is a 400 naming the field.
	bad := at(0)
	bad.Vec = bad.Vec[:3]
	if _, err := c.Coordinate().Update(&consul.CoordinateEntry{Node: "n1", Coord: bad}, nil); err == nil {
		t.Errorf("Coordinate.Update with 3 dimensions: got no error")
	} else if se, ok := err.(consul.StatusError); !ok || se.Code != 400 {
		t.Errorf("Coordinate.Update with 3 dimensions: got %v, want a 400", err)
	}
}
