package consensus

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a Raft goroutine outlives the tests: Shutdown
// must stop Raft and close its log.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/consensus.", "github.com/hashicorp/raft"))
}
