package catalog

import (
	"testing"
	"time"
)

func TestSizes(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range []*RegisterRequest{
		{Node: "n1", Address: "10.0.0.1", Service: &Service{ID: "web1", Service: "web", Port: 80},
			Checks: []*Check{{CheckID: "c1", Name: "c1", Status: HealthPassing, ServiceID: "web1"}}},
		{Node: "n1", Address: "10.0.0.1", Service: &Service{ID: "web2", Service: "web", Port: 81}},
		{Node: "n2", Address: "10.0.0.2", Service: &Service{ID: "db", Service: "db", Port: 5432}},
	} {
		if err := s.Register(uint64(i+1), req); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	if _, err := s.ApplyKV(10, time.Now(), &KVRequest{Op: KVSet, Entry: KVEntry{Key: "a", Value: []byte("1")}}); err != nil {
		t.Fatalf("ApplyKV: %v", err)
	}
	got, err := s.Sizes()
	if err != nil {
		t.Fatalf("Sizes: %v", err)
	}
	if want := (Sizes{Nodes: 2, ServiceInstances: 3, Checks: 1, KVEntries: 1}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
