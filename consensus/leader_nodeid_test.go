package consensus_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
)

// members is a Membership of fixed members.
type members []gossip.Member

func (m members) Members() []gossip.Member { return m }
func (m members) Changes() <-chan struct{} { return nil }

// TestLeaderReapsANodeBeforeAnotherIDTakesItsName: once gossip holds a
// node's name under another node ID (it forgot the old member), the
// leader deregisters the old node, services and all, before it registers
// the newcomer: the old node's services never move to the new address.
func TestLeaderReapsANodeBeforeAnotherIDTakesItsName(t *testing.T) {
	s := startSingleServer(t, "srv1")
	ctx := context.Background()
	const oldID, newID = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	err := s.Register(ctx, &catalog.RegisterRequest{
		Datacenter: "dc1", ID: oldID, Node: "c2", Address: "10.0.0.2",
		Service: &catalog.Service{ID: "web", Service: "web", Port: 80},
		Checks:  []*catalog.Check{{CheckID: catalog.SerfCheckID, Name: "Serf Health Status", Type: "gossip", Status: catalog.HealthCritical}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := newLeader(t, testLeaderConfig(), s, members{
		{Name: "srv1", Node: "srv1", Addr: netip.MustParseAddr("127.0.0.1"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleServer},
		{Name: "c2", Node: "c2", ID: newID, Addr: netip.MustParseAddr("10.0.0.66"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleClient},
	})
	if err := l.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	_, node, err := s.Store().Node(nil, "c2")
	if err != nil || node == nil {
		t.Fatalf("node c2: %v, %v", node, err)
	}
	if node.ID != newID || node.Address != "10.0.0.66" {
		t.Errorf("c2: got ID %s at %s, want %s at 10.0.0.66", node.ID, node.Address, newID)
	}
	if _, services, err := s.Store().NodeServices(nil, "c2"); err != nil || len(services) != 0 {
		t.Errorf("c2's services: got %v (err %v), want the old node's gone with it", services, err)
	}
}

// TestLeaderKeepsANodeWhoseIDGossipKnows: a member claiming a node name
// (in another case: memberlist names are case sensitive) with another
// node ID, while the node's own ID is still a member, takes nothing.
func TestLeaderKeepsANodeWhoseIDGossipKnows(t *testing.T) {
	s := startSingleServer(t, "srv1")
	ctx := context.Background()
	const realID, rogueID = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	err := s.Register(ctx, &catalog.RegisterRequest{
		Datacenter: "dc1", ID: realID, Node: "c2", Address: "10.0.0.2",
		Service: &catalog.Service{ID: "web", Service: "web", Port: 80},
	})
	if err != nil {
		t.Fatal(err)
	}
	l := newLeader(t, testLeaderConfig(), s, members{
		{Name: "srv1", Node: "srv1", Addr: netip.MustParseAddr("127.0.0.1"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleServer},
		{Name: "C2", Node: "C2", ID: rogueID, Addr: netip.MustParseAddr("10.0.0.66"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleClient},
		{Name: "c2", Node: "c2", ID: realID, Addr: netip.MustParseAddr("10.0.0.2"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleClient},
	})
	if err := l.Reconcile(ctx); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	_, node, err := s.Store().Node(nil, "c2")
	if err != nil || node == nil || node.ID != realID || node.Address != "10.0.0.2" {
		t.Fatalf("c2: got %+v (err %v), want ID %s at 10.0.0.2", node, err, realID)
	}
	if _, services, err := s.Store().NodeServices(nil, "c2"); err != nil || len(services) != 1 {
		t.Errorf("c2's services: got %v (err %v), want web kept", services, err)
	}
}

// TestLeaderKeepsANodeFromAMemberWithoutID: a member gossiping no node ID
// is the node of its name only at the node's address (an older agent);
// elsewhere it is a newcomer, which takes nothing while gossip knows the
// node's ID.
func TestLeaderKeepsANodeFromAMemberWithoutID(t *testing.T) {
	s := startSingleServer(t, "srv1")
	ctx := context.Background()
	const realID = "11111111-1111-4111-8111-111111111111"
	err := s.Register(ctx, &catalog.RegisterRequest{
		Datacenter: "dc1", ID: realID, Node: "c2", Address: "10.0.0.2",
		Service: &catalog.Service{ID: "web", Service: "web", Port: 80},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := gossip.Member{Name: "srv1", Node: "srv1", Addr: netip.MustParseAddr("127.0.0.1"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleServer}
	for _, tc := range []struct {
		name    string
		members members
	}{
		{"an older agent at the node's address", members{srv,
			{Name: "c2", Node: "c2", Addr: netip.MustParseAddr("10.0.0.2"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleClient}}},
		{"no ID elsewhere, the node's ID known", members{srv,
			{Name: "C2", Node: "C2", Addr: netip.MustParseAddr("10.0.0.66"), Status: gossip.StatusAlive, Datacenter: "dc1", Role: gossip.RoleClient},
			{Name: "c2", Node: "c2", ID: realID, Addr: netip.MustParseAddr("10.0.0.2"), Status: gossip.StatusFailed, Datacenter: "dc1", Role: gossip.RoleClient}}},
	} {
		if err := newLeader(t, testLeaderConfig(), s, tc.members).Reconcile(ctx); err != nil {
			t.Fatalf("%s: Reconcile: %v", tc.name, err)
		}
		_, node, err := s.Store().Node(nil, "c2")
		if err != nil || node == nil || node.ID != realID || node.Address != "10.0.0.2" {
			t.Fatalf("%s: c2 is %+v (err %v), want ID %s at 10.0.0.2", tc.name, node, err, realID)
		}
		if _, services, err := s.Store().NodeServices(nil, "c2"); err != nil || len(services) != 1 {
			t.Errorf("%s: c2's services: got %v (err %v), want web kept", tc.name, services, err)
		}
	}
}
