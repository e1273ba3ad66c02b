// Package leaktest checks, at the end of a package's tests, that no
// goroutine running the package's code outlived them: every goroutine a
// test started must have an owner that stopped it and waited for it.
package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// grace is how long goroutines get to finish after the last test. It
// outlasts the longest wait memberlist leaves behind a shut-down pool: a
// probe in flight waits out its probe interval (5s on the WAN) before it
// notices.
const grace = 10 * time.Second

// Main runs the tests of m and then fails the run if a goroutine whose stack
// mentions any of markers (such as "cairn/resolver." or
// "github.com/miekg/dns.") is still running after a short grace period.
// Call it from TestMain: os.Exit(leaktest.Main(m, markers...)).
func Main(m *testing.M, markers ...string) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if leaked := Leaked(grace, markers...); leaked != "" {
		fmt.Fprintf(os.Stderr, "leaked goroutines:\n%s\n", leaked)
		return 1
	}
	return 0
}

// Leaked waits up to timeout for the goroutines whose stacks mention any of
// markers to end, and returns the stacks of those that do not ("" if none).
func Leaked(timeout time.Duration, markers ...string) string {
	deadline := time.Now().Add(timeout)
	for {
		var leaked []string
		buf := make([]byte, 1<<20)
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		for _, g := range stacks[1:] { // stacks[0] is the calling goroutine
			for _, m := range markers {
				if strings.Contains(g, m) {
					leaked = append(leaked, g)
					break
				}
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
