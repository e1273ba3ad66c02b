package gossip_test

import (
	"strings"
	"testing"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

const (
	idA = "adf4238a-882b-9ddc-4a9d-5b6758e4159e"
	idB = "0b7f3b4e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
)

// TestMembersCarryNodeIDAndBuild: the node ID, build and protocol range a
// member gossips reach the others.
func TestMembersCarryNodeIDAndBuild(t *testing.T) {
	t.Parallel()
	ca := gossiptest.LANConfig("a", "dc1", gossip.RoleServer)
	ca.NodeID, ca.Build = idA, "v1.2.3:abcdef12"
	cb := gossiptest.LANConfig("b", "dc1", gossip.RoleClient)
	cb.NodeID = idB
	a, b := gossiptest.Start(t, ca), gossiptest.Start(t, cb)
	gossiptest.Join(t, b, a)
	gossiptest.WaitStatus(t, wait, "a", gossip.StatusAlive, b)
	for _, m := range b.Members() {
		if m.Name != "a" {
			continue
		}
		if m.ID != idA || m.Build != "v1.2.3:abcdef12" || m.ProtocolMin != gossip.ProtocolVersionMin || m.ProtocolMax != gossip.ProtocolVersionMax {
			t.Errorf("b sees a as %+v; want ID %s, build v1.2.3:abcdef12, protocols %d–%d", m, idA, gossip.ProtocolVersionMin, gossip.ProtocolVersionMax)
		}
	}
}

// TestLANRefusesDuplicateNodeID: an agent with another's node ID under
// another name cannot join, as in Consul.
func TestLANRefusesDuplicateNodeID(t *testing.T) {
	t.Parallel()
	ca := gossiptest.LANConfig("a", "dc1", gossip.RoleClient)
	ca.NodeID = idA
	cb := gossiptest.LANConfig("b", "dc1", gossip.RoleClient)
	cb.NodeID = strings.ToUpper(idA)
	a, b := gossiptest.Start(t, ca), gossiptest.Start(t, cb)
	n, err := b.Join(t.Context(), []string{gossiptest.Addr(a)})
	if err == nil || n != 0 || !strings.Contains(err.Error(), "node ID") {
		t.Fatalf("b joining a with a's node ID: Join = %d, %v; want 0 and an error naming the node ID", n, err)
	}
	for _, p := range []*gossip.Pool{a, b} {
		if got := p.Members(); len(got) != 1 {
			t.Errorf("%s has %d members after a refused join, want 1: %+v", p.LocalMember().Name, len(got), got)
		}
	}
}
