package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestTwoDCExample runs examples/two-dc/run.sh with the built binary, plain
// and secured (SECURE=1): two
// datacenters of three servers and a client on loopback, a dc1 client
// digging web.service.dc2, a prepared query failing over to dc2 while dc1
// has no web and answering from dc1 once it has, and every agent stopping
// cleanly.
func TestTwoDCExample(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("secure=%v", secure), func(t *testing.T) {
			t.Parallel()
			runTwoDC(t, secure)
		})
	}
}

// runTwoDC runs the two-dc example, with SECURE=1 when secure: a gossip
// key, mutual TLS with verified server names and ACLs denying by default,
// where an anonymous registration is refused and everything else works as
// without.
func runTwoDC(t *testing.T, secure bool) {
	const script = "../examples/two-dc/run.sh"
	agents := []string{"dc1-s1", "dc1-s2", "dc1-s3", "dc1-c1", "dc2-s1", "dc2-s2", "dc2-s3", "dc2-c1"}
	env := "SECURE=0"
	if secure {
		env = "SECURE=1"
	}
	got, n := runExample(t, script, agents, 4*time.Minute, "90", env)
	if secure {
		wantOutput(t, script, got, `agent returned 403: Permission denied: token lacks service:write on any service`)
	}
	wantOutput(t, script, got,
		`web\.service\.dc2\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 dc2-c1\.node\.dc2\.cluster\.`,
		`dc2-c1\.node\.dc2\.cluster\.\s+0\s+IN\s+A\s+`+n.addr("dc2-c1", 0),
		`status: NXDOMAIN`,
		`web\.query\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 dc2-c1\.node\.dc2\.cluster\.`,
		`web\.query\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8081 dc1-c1\.node\.dc1\.cluster\.`,
		`dc2-s3\.dc2\s+`+n.addr("dc2-s3", n.serfWAN)+`\s+alive\s+server\s+\S+\s+\d+\s+dc2`,
		`all agents stopped cleanly`)
}
