package cache_test

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of this package (a fill or a
// refresh loop; Close must stop them and wait) outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/cache."))
}
