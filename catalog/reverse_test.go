package catalog_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
)

func TestReverse(t *testing.T) {
	s, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	reg := func(idx uint64, node, addr string, svc *catalog.Service) {
		t.Helper()
		req := &catalog.RegisterRequest{Node: node, Address: addr, Service: svc}
		if err := catalog.ValidateRegister(req); err != nil {
			t.Fatal(err)
		}
		if err := s.Register(idx, req); err != nil {
			t.Fatal(err)
		}
	}
	reg(1, "n1", "10.0.0.1", &catalog.Service{Service: "web", Port: 80})
	reg(2, "n2", "10.0.0.2", &catalog.Service{Service: "db", ID: "db-1", Address: "10.0.0.9"})
	reg(3, "n3", "10.0.0.3", &catalog.Service{Service: "db", ID: "db-2", Address: "10.0.0.9"})
	reg(4, "n6", "2001:db8:0:0::1", &catalog.Service{Service: "v6", Address: "2001:DB8::2"})

	for _, tc := range []struct {
		addr        string
		nodes, svcs []string
	}{
		{"10.0.0.1", []string{"n1"}, nil}, // web uses its node's address: not a service address
		{"10.0.0.9", nil, []string{"db"}},
		{"2001:db8::1", []string{"n6"}, nil}, // stored canonically, found by any spelling
		{"2001:db8::2", nil, []string{"v6"}},
		{"10.9.9.9", nil, nil},
	} {
		nodes, svcs, err := s.Reverse(nil, netip.MustParseAddr(tc.addr))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(nodes, tc.nodes) || !slices.Equal(svcs, tc.svcs) {
			t.Errorf("Reverse(%s): got nodes %v services %v, want %v %v", tc.addr, nodes, svcs, tc.nodes, tc.svcs)
		}
	}
}

func TestReverseWatchFiresOnNewAddress(t *testing.T) {
	s, err := catalog.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	ws := catalog.NewWatchSet()
	if _, _, err := s.Reverse(ws, netip.MustParseAddr("10.0.0.5")); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(1, &catalog.RegisterRequest{Node: "n5", Address: "10.0.0.5"}); err != nil {
		t.Fatal(err)
	}
	if !fired(t, ws, 5*time.Second) {
		t.Fatal("watch did not fire when a node took the address")
	}
}
