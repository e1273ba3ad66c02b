package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestRTT sets coordinates through the API on an agent that computes none
// of its own, then estimates between two nodes, and from the agent.
func TestRTT(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.Coordinates.Disable = true
	cfg.Coordinates.UpdatePeriod = 20 * time.Millisecond
	addr := agenttest.Start(t, cfg).HTTPAddr().String()
	client, err := api.NewClient(api.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, node := range []string{"n1", "n2"} {
		if err := client.Catalog().Register(ctx, &api.CatalogRegistration{Node: node, Address: "10.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	for node, x := range map[string]float64{"test": 0, "n1": 0.010, "n2": 0.030} {
		vec := make([]float64, 8)
		vec[0] = x
		e := &api.CoordinateEntry{Node: node, Coord: &api.NetworkCoordinate{Vec: vec, Error: 0.2, Height: 0.00001}}
		if err := client.Coordinate().Update(ctx, e, nil); err != nil {
			t.Fatalf("update %s: %v", node, err)
		}
	}
	waittest.For(t, 10*time.Second, "three coordinates", func() error {
		got, _, err := client.Coordinate().Nodes(ctx)
		if err == nil && len(got) != 3 {
			err = fmt.Errorf("got %d coordinates, want 3", len(got))
		}
		return err
	})
	// 20ms apart, plus both heights (10µs each).
	if got, want := mustRun(t, "rtt", "-http-addr", addr, "n1", "n2"), "Estimated n1 <-> n2 rtt: 20.020 ms (using LAN coordinates)\n"; got != want {
		t.Errorf("rtt n1 n2: got %q, want %q", got, want)
	}
	if got, want := mustRun(t, "rtt", "n2", "-http-addr", addr), "Estimated n2 <-> test rtt: 30.020 ms (using LAN coordinates)\n"; got != want {
		t.Errorf("rtt n2 (from the agent): got %q, want %q", got, want)
	}
	_, stderr, code := runCLI(t, "rtt", "-http-addr", addr, "n1", "nobody")
	wantError(t, stderr, code, `no network coordinate for node "nobody"`)
	_, stderr, code = runCLI(t, "rtt", "-http-addr", addr)
	wantUsage(t, stderr, code, "give one or two node names")
	_, stderr, code = runCLI(t, "rtt", "-http-addr", addr, "a", "b", "c")
	wantUsage(t, stderr, code, "give one or two node names")
}

// TestRTTWAN: a server's own WAN coordinate is known from its start, so
// the estimate from it to itself is both heights.
func TestRTTWAN(t *testing.T) {
	t.Parallel()
	addr := devAgent(t, "s1")
	if got, want := mustRun(t, "rtt", "-wan", "-http-addr", addr, "s1.dc1"), "Estimated s1.dc1 <-> s1.dc1 rtt: 0.020 ms (using WAN coordinates)\n"; got != want {
		t.Errorf("rtt -wan s1.dc1: got %q, want %q", got, want)
	}
}
