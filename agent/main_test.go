package agent_test

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of the agent or of anything it
// starts (Raft, its log, the DNS and HTTP servers, local state) outlives
// the tests: Shutdown must stop and wait for all of them.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/agent", "cairn/consensus.", "cairn/resolver.",
		"github.com/hashicorp/raft", "github.com/miekg/dns.", "net/http.(*Server)",
		"cairn/gossip.", "cairn/rpc.", "github.com/hashicorp/memberlist", "github.com/hashicorp/yamux"))
}
