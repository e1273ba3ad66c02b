package catalog

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// releaseWait bounds the waits of this test; they end as soon as what
// they wait for happens, so it only matters when the test fails.
const releaseWait = 5 * time.Second

// A restore must let the collector free the generation it replaces, even
// while readers block on watches of it (as blocking queries and the change
// feed do): a server briefly holds two catalogs, never more.
func TestRestoreReleasesOldGeneration(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	d := &Dump{Index: 10}
	for n := range 20 {
		node := fmt.Sprintf("node-%d", n)
		d.Nodes = append(d.Nodes, &Node{Node: node, Address: fmt.Sprintf("10.0.0.%d", n)})
		svc := &Service{ID: "web", Service: "web", Port: 80}
		d.Services = append(d.Services, DumpService{Node: node, Service: svc})
		d.Checks = append(d.Checks, &Check{Node: node, CheckID: "service:web", Name: "web", Status: HealthPassing, ServiceID: "web", ServiceName: "web"})
	}
	if err := s.Restore(d); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	freed := make(chan struct{})
	runtime.AddCleanup(s.state.Load().db, func(ch chan struct{}) { close(ch) }, freed)

	// Readers of every kind block on the old generation, then read again
	// once woken, as a blocking query does, and keep what they read.
	reads := []func(ws WatchSet) error{
		func(ws WatchSet) error { _, _, err := s.ServiceInstances(ws, "web", ""); return err },
		func(ws WatchSet) error { _, _, err := s.NodeChecks(ws, "node-1"); return err },
		func(ws WatchSet) error { _, _, err := s.NodeServices(ws, "node-1"); return err },
		func(ws WatchSet) error { _, _, err := s.ChecksInState(ws, HealthPassing); return err },
		func(ws WatchSet) error { _, _, err := s.Nodes(ws); return err },
		func(ws WatchSet) error { s.ChangesSince(ws, 10); return nil },
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(reads))
	blocked := make(chan struct{}, len(reads))
	for _, read := range reads {
		wg.Go(func() {
			ws := NewWatchSet()
			if err := read(ws); err != nil {
				errs <- err
				return
			}
			blocked <- struct{}{}
			if ws.Watch(time.After(releaseWait)) {
				errs <- fmt.Errorf("watch not woken by Restore")
				return
			}
			if err := read(NewWatchSet()); err != nil {
				errs <- err
			}
		})
	}
	for range reads {
		<-blocked
	}
	if err := s.Restore(&Dump{Index: 20}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	deadline := time.Now().Add(releaseWait)
	for {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the replaced generation's database is still reachable after a restore")
		}
	}
}
