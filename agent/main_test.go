package agent_test

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of the agent or of anything it
// starts (Raft, its log, the DNS and HTTP servers, local state) outlives
// the tests: Shutdown must stop and wait for all of them.
//
// Most tests here spend their time waiting on clusters (elections, gossip,
// anti-entropy), not on a CPU, so four run at once unless -parallel says
// otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
	os.Exit(leaktest.Main(m, "cairn/agent", "cairn/consensus.", "cairn/resolver.",
		"github.com/hashicorp/raft", "github.com/miekg/dns.", "net/http.(*Server)",
		"cairn/gossip.", "cairn/rpc.", "github.com/hashicorp/memberlist", "github.com/hashicorp/yamux"))
}
