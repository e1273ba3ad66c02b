package upgrade

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairndns/cairn/e2e/e2etest"
)

// enabled says CAIRN_E2E=1: a machine that lacks what the test needs
// (git, the previous release's commit) fails it instead of skipping it.
var enabled = os.Getenv("CAIRN_E2E") == "1"

// headBuild builds HEAD's binary once, for the first test that needs it
// (without -race, whatever the tests run with: the agents' behaviour is
// what is tested); TestMain removes it.
var headBuild struct {
	once    sync.Once
	bin     string
	cleanup func()
	err     error
}

// headBinary returns the binary the agents are upgraded to: HEAD's, or
// the one CAIRN_UPGRADE_TO names (another branch's, or a deliberately
// incompatible one to see the test fail).
func headBinary(t *testing.T) string {
	t.Helper()
	headBuild.once.Do(func() {
		if bin := os.Getenv("CAIRN_UPGRADE_TO"); bin != "" {
			headBuild.bin, headBuild.err = filepath.Abs(bin)
			if headBuild.err == nil {
				_, headBuild.err = os.Stat(headBuild.bin)
			}
			if headBuild.err != nil {
				headBuild.err = fmt.Errorf("CAIRN_UPGRADE_TO: %w", headBuild.err)
			}
			return
		}
		headBuild.bin, headBuild.cleanup, headBuild.err = e2etest.BuildCairn("cairn-upgrade-")
	})
	if headBuild.err != nil {
		t.Fatal(headBuild.err)
	}
	return headBuild.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if headBuild.cleanup != nil {
		headBuild.cleanup()
	}
	os.Exit(code)
}
