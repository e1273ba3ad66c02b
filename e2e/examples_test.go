package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// runExample runs an example script with the built binary, a temporary
// work directory and TIMEOUT=stepTimeout seconds, fails the test if it
// exits non-zero or takes longer than limit, and checks that its output
// matches every regular expression in want. It returns the output.
func runExample(t *testing.T, script string, limit time.Duration, stepTimeout string, want ...string) string {
	t.Helper()
	requireDig(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), "CAIRN="+cairnBin, "WORK="+t.TempDir(), "TIMEOUT="+stepTimeout)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out.String())
	}
	got := out.String()
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(got) {
			t.Errorf("%s output lacks %s:\n%s", script, w, got)
		}
	}
	return got
}
