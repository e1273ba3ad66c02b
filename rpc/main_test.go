package rpc

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of this package or of yamux (each
// Server must be shut down and each Pool closed, both waiting for their
// goroutines) outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/rpc.", "hashicorp/yamux"))
}
