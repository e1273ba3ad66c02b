package checks_test

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a check goroutine (or a probe's) outlives the
// tests: every Manager a test starts must be closed, and Close must wait.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/agent/checks."))
}
