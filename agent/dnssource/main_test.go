package dnssource

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of the feed followers, or of the
// servers and pools the tests start, outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/agent/dnssource.", "cairn/agent/door.", "cairn/consensus.", "cairn/rpc.",
		"github.com/hashicorp/raft", "github.com/hashicorp/yamux"))
}
