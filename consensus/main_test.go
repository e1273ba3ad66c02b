package consensus

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a Raft goroutine outlives the tests: Shutdown
// must stop Raft, close its log and its network transport (and the
// connections it accepted); the rpc servers of cluster tests must be shut
// down too.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/consensus.", "github.com/hashicorp/raft", "cairn/rpc.", "hashicorp/yamux"))
}
