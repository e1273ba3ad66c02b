package gossip_test

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a pool or memberlist goroutine outlives the
// tests: Shutdown must stop memberlist and wait for Join attempts.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/gossip.", "hashicorp/memberlist"))
}
