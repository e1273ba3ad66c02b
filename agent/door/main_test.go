package door

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of the door (an attempt waiting
// on its call), or of the servers and pools the tests start, outlives
// the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/agent/door.", "cairn/consensus.", "cairn/rpc.",
		"github.com/hashicorp/raft", "github.com/hashicorp/yamux"))
}
