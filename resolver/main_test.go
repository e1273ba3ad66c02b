package resolver

import (
	"os"
	"testing"

	"github.com/cairndns/cairn/internal/leaktest"
)

// TestMain fails the run if a goroutine of this package or of miekg/dns (each Server must be shut down and have waited for its goroutines) outlives the tests.
func TestMain(m *testing.M) {
	os.Exit(leaktest.Main(m, "cairn/resolver.", "github.com/miekg/dns."))
}
