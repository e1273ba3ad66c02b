package httpapi_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if a goroutine running this package's code (a
// server's Serve loop) outlives the tests: each test that starts a Server
// must shut it down, and Shutdown must wait for it.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leaked goroutines:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits up to timeout for the goroutines running code of
// this package to end, and returns the stacks of those that do not.
func leakedGoroutines(timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for {
		var leaked []string
		buf := make([]byte, 1<<20)
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		for _, g := range stacks[1:] { // stacks[0] is this goroutine
			if strings.Contains(g, "cairn/agent/httpapi.") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
