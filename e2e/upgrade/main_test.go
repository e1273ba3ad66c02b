package upgrade

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairndns/cairn/e2e/e2etest"
)

// headBin is the binary the agents are upgraded to: HEAD's, which TestMain
// builds (without -race, whatever the tests run with: the agents'
// behaviour is what is tested), or the one CAIRN_UPGRADE_TO names.
var headBin string

// enabled says CAIRN_E2E=1: a machine that lacks what the test needs
// (git, the previous release's commit) fails it instead of skipping it.
var enabled = os.Getenv("CAIRN_E2E") == "1"

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	if bin := os.Getenv("CAIRN_UPGRADE_TO"); bin != "" {
		// A binary built elsewhere: another branch's, or a deliberately
		// incompatible one to see the test fail.
		abs, err := filepath.Abs(bin)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "upgrade: CAIRN_UPGRADE_TO:", err)
			return 1
		}
		headBin = abs
		return m.Run()
	}
	bin, cleanup, err := e2etest.BuildCairn("cairn-upgrade-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		return 1
	}
	defer cleanup()
	headBin = bin
	return m.Run()
}
