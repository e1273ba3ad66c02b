package gossip_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// TestAFailedMembersNameStaysBoundToItsID: a member with another node ID
// cannot join under the name of a failed member the pool keeps, neither
// before nor after memberlist forgets the failed one (GossipToTheDead,
// after which memberlist alone would take it); the same node, with its
// own ID, comes back.
func TestAFailedMembersNameStaysBoundToItsID(t *testing.T) {
	t.Parallel()
	ca := gossiptest.LANConfig("a", "dc1", gossip.RoleServer)
	ca.Timing.GossipToTheDead = 500 * time.Millisecond
	ca.RetainDead = time.Hour
	cb := gossiptest.LANConfig("b", "dc1", gossip.RoleClient)
	cb.NodeID = idB
	a, b := gossiptest.Start(t, ca), gossiptest.Start(t, cb)
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a)
	if err := b.Shutdown(); err != nil {
		t.Fatal(err)
	}
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusFailed, a)
	failed := time.Now()

	ci := gossiptest.LANConfig("b", "dc1", gossip.RoleClient)
	ci.NodeID = idA
	impostor := gossiptest.Start(t, ci)
	// Its join reaches a, which refuses to merge it (the impostor, having
	// merged a's state, thinks it joined) and goes on refusing its alive
	// messages until memberlist has long forgotten b (GossipToTheDead,
	// then its next round over the members).
	_, _ = impostor.Join(t.Context(), []string{gossiptest.Addr(a)})
	forgotten := 10 * ca.Timing.GossipToTheDead
	gossiptest.WaitFor(t, forgotten+wait, func() error {
		for _, m := range a.Members() {
			if m.Name == "b" && (m.ID != idB || m.Status != gossip.StatusFailed) {
				t.Fatalf("%s after b failed, a holds b as %+v; want the failed member of ID %s", time.Since(failed).Round(time.Millisecond), m, idB)
			}
		}
		if since := time.Since(failed); since < forgotten {
			return fmt.Errorf("%s since b failed", since.Round(time.Millisecond))
		}
		return nil
	})
	if a.NameConflicts() == 0 {
		t.Error("no name conflict counted for the refusals")
	}

	// b itself, with its ID, on the impostor's port or its own: welcome.
	cb.BindPort = 0
	back := gossiptest.Start(t, cb)
	gossiptest.Join(t, back, a)
	gossiptest.WaitStatus(t, wait, "b", gossip.StatusAlive, a)
}
