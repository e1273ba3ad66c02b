package upgrade

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The previous release, which HEAD must upgrade from: the newest v* tag
// that is not HEAD's own commit. The commit is recorded too, because CI's
// clone may have no tags; TestPreviousReleaseIsNewest fails when a newer
// release was tagged and these were not moved to it.
const (
	previousTag    = "v0.1.0"
	previousCommit = "fcfdcb7d0809994414017cf0fd3c26d2d686bbee"
)

// buildTimeout bounds building one release (the module and build caches
// are shared with the test's own build, so most of it is compiling
// cairn's own packages).
const buildTimeout = 5 * time.Minute

// release is one cairn binary and the revision stamped into it.
type release struct {
	name     string // the tag, or the commit when the clone lacks the tag
	bin      string
	revision string // vcs.revision, cut to 8 characters as the agent reports it
}

// repoRoot returns the top of the git work tree the test runs in.
func repoRoot(ctx context.Context) (string, error) {
	out, err := git(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("find the repository's top: %w", err)
	}
	return out, nil
}

// git runs git in dir and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// requireGit skips the test when git or the repository is missing, or
// fails it when CAIRN_E2E=1 says it must run.
func requireGit(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		missing(t, "git is not on PATH (apt-get install git)")
	}
	root, err := repoRoot(t.Context())
	if err != nil {
		missing(t, fmt.Sprintf("the test builds the previous release from the repository's history, and there is none here: %v", err))
	}
	return root
}

// missing skips the test for want of something it needs, or fails it
// when CAIRN_E2E=1.
func missing(t *testing.T, why string) {
	t.Helper()
	if enabled {
		t.Fatalf("%s; required when CAIRN_E2E=1", why)
	}
	t.Skipf("%s; set CAIRN_E2E=1 to fail instead", why)
}

// previousRelease resolves the previous release in the clone: the tag
// when it is there (it must name the recorded commit), else the recorded
// commit. A clone with neither (a shallow one) fails the test.
func previousRelease(t *testing.T, root string) (name, commit string) {
	t.Helper()
	ctx := t.Context()
	if c, err := git(ctx, root, "rev-parse", "--verify", "--quiet", previousTag+"^{commit}"); err == nil {
		if c != previousCommit {
			t.Fatalf("tag %s names commit %s, but the test records %s as that release: move previousCommit in %s to the tag's commit",
				previousTag, c, previousCommit, "e2e/upgrade/release_test.go")
		}
		return previousTag, previousCommit
	}
	if _, err := git(ctx, root, "cat-file", "-e", previousCommit+"^{commit}"); err != nil {
		t.Fatalf("neither tag %s nor its commit %s is in this clone (a shallow clone?): the rolling-upgrade test builds the previous release from git; "+
			"fetch the history (git fetch --unshallow --tags, or a CI checkout with fetch-depth 0): %v", previousTag, previousCommit, err)
	}
	t.Logf("tag %s is not in this clone; building its commit %s", previousTag, previousCommit)
	return previousCommit, previousCommit
}

// buildRelease returns the cairn binary of commit, built from git without
// touching the work tree (in a temporary clone, removed after)
// and cached under the user's cache directory by commit, so that reruns
// do not build it again.
func buildRelease(t *testing.T, root, name, commit string) release {
	t.Helper()
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = os.TempDir()
	}
	dir := filepath.Join(cacheDir, "cairn", "releases", commit)
	bin := filepath.Join(dir, "cairn")
	if _, err := os.Stat(bin); err != nil {
		begin := time.Now()
		if err := buildCommit(t, root, commit, dir); err != nil {
			t.Fatalf("build release %s (%s): %v", name, commit, err)
		}
		t.Logf("built release %s (%s) in %v into %s", name, commit, time.Since(begin).Round(time.Second), bin)
	} else {
		t.Logf("release %s (%s): cached at %s", name, commit, bin)
	}
	rev, err := revisionOf(bin)
	if err != nil {
		t.Fatal(err)
	}
	return release{name: name, bin: bin, revision: rev}
}

// buildCommit builds ./cmd/cairn of commit into dir/cairn. The binary is
// built beside it and renamed into place, so that a concurrent run sees
// either none or a whole one.
func buildCommit(t *testing.T, root, commit, dir string) error {
	ctx, cancel := context.WithTimeout(t.Context(), buildTimeout)
	defer cancel()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src, err := os.MkdirTemp("", "cairn-release-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	tree := filepath.Join(src, "tree")
	// A clone sharing the repository's objects (no copy, no network)
	// rather than git archive or a worktree: the go command stamps the
	// commit as vcs.revision only in a checkout with a .git directory,
	// and the agents report it, which the test checks.
	if _, err := git(ctx, root, "clone", "--quiet", "--no-checkout", "--shared", root, tree); err != nil {
		return err
	}
	if _, err := git(ctx, tree, "checkout", "--quiet", "--detach", commit); err != nil {
		return err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("cairn.%d.tmp", os.Getpid()))
	// -buildvcs=true overrides a GOFLAGS=-buildvcs=false in the go env.
	build := exec.CommandContext(ctx, goCommand(), "build", "-buildvcs=true", "-o", tmp, "./cmd/cairn")
	build.Dir = tree
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/cairn at %s: %w\n%s", commit, err, out)
	}
	return os.Rename(tmp, filepath.Join(dir, "cairn"))
}

// goCommand is the go command on PATH (go test puts the running
// toolchain's first), else plain "go".
func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// revisionOf reads the VCS revision stamped into a Go binary, cut to 8
// characters as the agent reports it; "unknown" when the build has none.
func revisionOf(bin string) (string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("read the build information of %s: %w", bin, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			return s.Value[:min(8, len(s.Value))], nil
		}
	}
	return "unknown", nil
}

// TestPreviousReleaseIsNewest checks that the release the upgrade test
// starts from is the newest v* tag that is not HEAD's own commit, so that
// tagging a release and moving on does not leave the test upgrading from
// an older one. A clone without tags has nothing to say.
func TestPreviousReleaseIsNewest(t *testing.T) {
	root := requireGit(t)
	ctx := t.Context()
	head, err := git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	tags, err := git(ctx, root, "tag", "--list", "v*", "--sort=-v:refname")
	if err != nil {
		t.Fatal(err)
	}
	for tag := range strings.FieldsSeq(tags) {
		commit, err := git(ctx, root, "rev-parse", "--verify", tag+"^{commit}")
		if err != nil {
			t.Fatal(err)
		}
		if commit == head {
			continue
		}
		if tag != previousTag || commit != previousCommit {
			t.Errorf("the newest release before HEAD is %s (%s), the upgrade test starts from %s (%s): move previousTag and previousCommit in e2e/upgrade/release_test.go",
				tag, commit, previousTag, previousCommit)
		}
		return
	}
	if tags == "" {
		t.Logf("no v* tags in this clone; the upgrade test falls back to commit %s", previousCommit)
	}
}
