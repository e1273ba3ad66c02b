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
	t.Parallel()
	const script = "../examples/local-cluster/run.sh"
	agents := []string{"s1", "s2", "s3", "c1", "c2"}
	got, n := runExample(t, script, agents, 3*time.Minute, "60")
	wantOutput(t, script, got,
		`s1\s+`+n.addr("s1", n.serfLAN)+`\s+alive\s+server\s+\S+\s+\d+\s+dc1`,
		`s3\s+[0-9a-f]{8}-[0-9a-f-]{27}\s+`+n.addr("s3", n.server)+`\s+(leader|follower)\s+true`,
		`web\.service\.dc1\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 c1\.node\.dc1\.cluster\.`,
		`c1\.node\.dc1\.cluster\.\s+0\s+IN\s+A\s+`+n.addr("c1", 0),
		`all agents stopped cleanly`)
	for _, name := range agents {
		if !strings.Contains(got, "started "+name+" on "+n.ip[name]) {
			t.Errorf("output does not show %s starting on %s:\n%s", name, n.ip[name], got)
		}
	}
}
