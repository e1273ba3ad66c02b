package local_test

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine running this package's code (an anti-entropy loop; whoever starts Run must stop it and wait) outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/agent/local."))
}
