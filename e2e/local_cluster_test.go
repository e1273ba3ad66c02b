package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestLocalClusterExample runs examples/local-cluster/run.sh with the built
// binary: three server processes and two client processes on their own
// loopback addresses, a service registered on one client and dug from the
// other, and every process stopped with exit status 0.
func TestLocalClusterExample(t *testing.T) {
	requireDig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../examples/local-cluster/run.sh")
	cmd.Env = append(os.Environ(), "CAIRN="+cairnBin, "WORK="+t.TempDir(), "TIMEOUT=60")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		`web\.service\.dc1\.cluster\.\s+0\s+IN\s+SRV\s+1 1 8080 c1\.node\.dc1\.cluster\.`,
		`c1\.node\.dc1\.cluster\.\s+0\s+IN\s+A\s+127\.0\.0\.24`,
		`all agents stopped cleanly`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	for _, name := range []string{"s1", "s2", "s3", "c1", "c2"} {
		if !strings.Contains(got, "started "+name) {
			t.Errorf("output does not show %s starting:\n%s", name, got)
		}
	}
}
