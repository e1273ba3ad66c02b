package rpc

import (
	"errors"
	"testing"
	"time"
)

func TestBlockingTimeout(t *testing.T) {
	l := DefaultBlockingLimits()
	noJitter := func(int64) int64 { return 0 }
	maxJitter := func(n int64) int64 { return n - 1 }
	for _, tc := range []struct {
		name      string
		maxQuery  time.Duration
		randN     func(int64) int64
		want      time.Duration
		jitterMax time.Duration // for the real random source: want <= got < want+jitterMax
	}{
		{"default", 0, noJitter, 5 * time.Minute, 5 * time.Minute / 16},
		{"negative is default", -time.Second, noJitter, 5 * time.Minute, 5 * time.Minute / 16},
		{"under max", 30 * time.Second, noJitter, 30 * time.Second, 30 * time.Second / 16},
		{"at max", 10 * time.Minute, noJitter, 10 * time.Minute, 10 * time.Minute / 16},
		{"capped", time.Hour, noJitter, 10 * time.Minute, 10 * time.Minute / 16},
		{"largest jitter", time.Minute, maxJitter, time.Minute + time.Minute/16 - 1, time.Minute / 16},
		{"capped largest jitter", time.Hour, maxJitter, 10*time.Minute + 10*time.Minute/16 - 1, 10 * time.Minute / 16},
		{"tiny", 10 * time.Nanosecond, maxJitter, 10 * time.Nanosecond, 1},
	} {
		q := QueryOptions{MinQueryIndex: 1, MaxQueryTime: tc.maxQuery}
		if got := q.blockingTimeout(l, tc.randN); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		if tc.randN(1<<40) != 0 {
			continue // the real random source is checked against the base
		}
		for range 100 {
			got := q.BlockingTimeout(l)
			if got < tc.want || got >= tc.want+tc.jitterMax {
				t.Fatalf("%s: got %s, want in [%s, %s)", tc.name, got, tc.want, tc.want+tc.jitterMax)
			}
		}
	}
	// The jitter is spread, not constant.
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[QueryOptions{}.BlockingTimeout(l)] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 timeouts took %d values, want jitter", len(seen))
	}
	// No jitter when the fraction is 0.
	l.JitterFraction = 0
	if got := (QueryOptions{}).BlockingTimeout(l); got != 5*time.Minute {
		t.Errorf("JitterFraction 0: got %s, want 5m", got)
	}
}

func TestQueryOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		q       QueryOptions
		wantErr bool
	}{
		{QueryOptions{}, false},
		{QueryOptions{AllowStale: true}, false},
		{QueryOptions{RequireConsistent: true}, false},
		{QueryOptions{AllowStale: true, RequireConsistent: true}, true},
		{QueryOptions{MaxQueryTime: -1}, true},
	} {
		err := tc.q.Validate()
		if (err != nil) != tc.wantErr {
			t.Errorf("%+v: got %v, want error %v", tc.q, err, tc.wantErr)
		}
	}
	if err := (QueryOptions{AllowStale: true, RequireConsistent: true}).Validate(); !errors.Is(err, ErrConflictingConsistency) {
		t.Errorf("got %v, want ErrConflictingConsistency", err)
	}
	if (QueryOptions{}).IsBlocking() || !(QueryOptions{MinQueryIndex: 1}).IsBlocking() {
		t.Error("IsBlocking: want MinQueryIndex > 0")
	}
}
