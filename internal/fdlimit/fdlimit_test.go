package fdlimit_test

import (
	"errors"
	"runtime"
	"syscall"
	"testing"

	"github.com/cairndns/cairn/internal/fdlimit"
)

func TestRaise(t *testing.T) {
	soft, hard, err := fdlimit.Raise()
	if runtime.GOOS != "linux" {
		if !errors.Is(err, fdlimit.ErrUnsupported) {
			t.Fatalf("on %s: got %v, want ErrUnsupported", runtime.GOOS, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Raise: %v", err)
	}
	if soft != hard || soft == 0 {
		t.Errorf("got soft %d, hard %d; want soft raised to hard", soft, hard)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if uint64(lim.Cur) != soft || uint64(lim.Max) != hard {
		t.Errorf("the process's limit is %d/%d, Raise reported %d/%d", lim.Cur, lim.Max, soft, hard)
	}
	// A second call finds nothing to do and says the same.
	if s2, h2, err := fdlimit.Raise(); err != nil || s2 != soft || h2 != hard {
		t.Errorf("second Raise: got %d/%d, %v; want %d/%d, nil", s2, h2, err, soft, hard)
	}
}

func TestConnBudget(t *testing.T) {
	for _, tc := range []struct{ limit, want uint64 }{
		{0, 0},
		{256, 128},
		{512, 256},
		{1024, 1024 - 256},        // the reserve's floor
		{4096, 4096 - 819},        // a fifth
		{1 << 20, 1<<20 - 209715}, // a fifth
		{fdlimit.Unlimited, 0},    // no cap
	} {
		if got := fdlimit.ConnBudget(tc.limit); got != tc.want {
			t.Errorf("ConnBudget(%d): got %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// TestHTTPConns: HTTP gets the budget less DNS over TCP's share, and at
// least 64 however much DNS takes.
func TestHTTPConns(t *testing.T) {
	soft, _, err := fdlimit.Raise()
	if err != nil || fdlimit.ConnBudget(soft) == 0 {
		if got := fdlimit.HTTPConns(100); got != 0 {
			t.Errorf("unknown or no limit: got %d, want 0 (no cap)", got)
		}
		return
	}
	budget := int(fdlimit.ConnBudget(soft))
	if got, want := fdlimit.HTTPConns(100), max(budget-100, 64); got != want {
		t.Errorf("HTTPConns(100) under %d: got %d, want %d", soft, got, want)
	}
	if got := fdlimit.HTTPConns(budget + 1000); got != 64 {
		t.Errorf("HTTPConns(more than the budget): got %d, want 64", got)
	}
}
