package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestLocalClusterExample runs examples/local-cluster/run.sh with the built
// binary: three server processes and two client processes on their own
// loopback addresses, a service registered on one client and dug from the
// other, and every process stopped with exit status 0.
func TestLocalClusterExample(t *testing.T) {
	got := runExample(t, "../examples/local-cluster/run.sh", 3*time.Minute, "60",
		`web\.service\.dc1\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 c1\.node\.dc1\.cluster\.`,
		`c1\.node\.dc1\.cluster\.\s+0\s+IN\s+A\s+127\.0\.0\.24`,
		`all agents stopped cleanly`)
	for _, name := range []string{"s1", "s2", "s3", "c1", "c2"} {
		if !strings.Contains(got, "started "+name) {
			t.Errorf("output does not show %s starting:\n%s", name, got)
		}
	}
}
