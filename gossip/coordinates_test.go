package gossip_test

import (
	"fmt"
	"testing"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// TestCoordinatesMoveWithProbes: after a few probe rounds every member
// has heard the others' coordinates in acks, and its own has moved away
// from the origin it starts at (Error 1.5: no confidence yet).
func TestCoordinatesMoveWithProbes(t *testing.T) {
	t.Parallel()
	s1, c1, c2 := startThree(t)
	pools := []*gossip.Pool{s1, c1, c2}
	gossiptest.WaitFor(t, wait, func() error {
		for _, p := range pools {
			name := p.LocalMember().Name
			c, ok := p.Coordinate()
			if !ok || len(c.Vec) != 8 {
				return fmt.Errorf("%s: coordinate %+v, %v; want 8 dimensions", name, c, ok)
			}
			if c.Error >= 1.5 {
				return fmt.Errorf("%s: error still %g, want below 1.5 after probes", name, c.Error)
			}
			if peers := p.PeerCoordinates(); len(peers) != 2 {
				return fmt.Errorf("%s: knows %d peers' coordinates, want 2", name, len(peers))
			}
		}
		return nil
	})
}

func TestCoordinatesDisabled(t *testing.T) {
	t.Parallel()
	cfg := gossiptest.LANConfig("a", "dc1", gossip.RoleServer)
	cfg.DisableCoordinates = true
	a := gossiptest.Start(t, cfg)
	b := gossiptest.Start(t, gossiptest.LANConfig("b", "dc1", gossip.RoleClient))
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a)
	if c, ok := a.Coordinate(); ok {
		t.Errorf("disabled: got coordinate %+v, want none", c)
	}
	if got := a.PeerCoordinates(); got != nil {
		t.Errorf("disabled: got peers' coordinates %v, want none", got)
	}
	// b probes a, whose acks carry nothing: b learns no coordinate of a
	// but keeps working. Wait until b has probed a few times.
	gossiptest.WaitFor(t, wait, func() error {
		if _, ok := b.Coordinate(); !ok {
			return fmt.Errorf("b has no coordinate")
		}
		return nil
	})
	if _, ok := b.PeerCoordinates()["a"]; ok {
		t.Errorf("b learnt a coordinate from a, whose coordinates are disabled")
	}
}
