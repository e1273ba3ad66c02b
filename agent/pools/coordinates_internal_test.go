package pools

import (
	"testing"
	"time"
)

// TestCoordinateInterval: the period is the minimum up to 64 agents per
// second of it, then grows with the cluster; the wait is jittered up to
// twice the period.
func TestCoordinateInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		min    time.Duration
		agents int
		base   time.Duration
	}{
		{10 * time.Second, 1, 10 * time.Second},
		{10 * time.Second, 640, 10 * time.Second},
		{10 * time.Second, 1280, 20 * time.Second},
		{200 * time.Millisecond, 3, 200 * time.Millisecond},
	} {
		for range 100 {
			if got := coordinateInterval(tc.min, tc.agents); got < tc.base || got >= 2*tc.base {
				t.Fatalf("coordinateInterval(%s, %d): got %s, want in [%s, %s)", tc.min, tc.agents, got, tc.base, 2*tc.base)
			}
		}
	}
}
