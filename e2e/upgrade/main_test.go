package upgrade

import (
	"fmt"
	"os"
	"testing"

	"github.com/cairndns/cairn/e2e/e2etest"
)

// headBin is HEAD's cairn binary, which TestMain builds (without -race,
// whatever the tests run with: the agents' behaviour is what is tested).
var headBin string

// enabled says CAIRN_E2E=1: a machine that lacks what the test needs
// (git, the previous release's commit) fails it instead of skipping it.
var enabled = os.Getenv("CAIRN_E2E") == "1"

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	bin, cleanup, err := e2etest.BuildCairn("cairn-upgrade-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	defer cleanup()
	headBin = bin
	return m.Run()
}
