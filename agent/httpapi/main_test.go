package httpapi_test

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine running this package's code (a server's Serve loop; Shutdown must wait for it) outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/agent/httpapi."))
}
