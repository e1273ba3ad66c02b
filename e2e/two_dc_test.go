package e2e

import (
	"testing"
	"time"
)

// TestTwoDCExample runs examples/two-dc/run.sh with the built binary: two
// datacenters of three servers and a client on loopback, a dc1 client
// digging web.service.dc2, a prepared query failing over to dc2 while dc1
// has no web and answering from dc1 once it has, and every agent stopping
// cleanly.
func TestTwoDCExample(t *testing.T) {
	t.Parallel()
	const script = "../examples/two-dc/run.sh"
	agents := []string{"dc1-s1", "dc1-s2", "dc1-s3", "dc1-c1", "dc2-s1", "dc2-s2", "dc2-s3", "dc2-c1"}
	got, n := runExample(t, script, agents, 4*time.Minute, "90")
	wantOutput(t, script, got,
		`web\.service\.dc2\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 dc2-c1\.node\.dc2\.cluster\.`,
		`dc2-c1\.node\.dc2\.cluster\.\s+0\s+IN\s+A\s+`+n.addr("dc2-c1", 0),
		`status: NXDOMAIN`,
		`web\.query\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 dc2-c1\.node\.dc2\.cluster\.`,
		`web\.query\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8081 dc1-c1\.node\.dc1\.cluster\.`,
		`dc2-s3\.dc2\s+`+n.addr("dc2-s3", n.serfWAN)+`\s+alive\s+server\s+dc2`,
		`all agents stopped cleanly`)
}
