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

// previousRelease resolves the previous release in the clone, failing
// the test when it cannot.
func previousRelease(t *testing.T, root string) (name, commit string) {
	t.Helper()
	name, err := resolveRelease(t.Context(), root, previousTag, previousCommit)
	if err != nil {
		t.Fatal(err)
	}
	if name != previousTag {
		t.Logf("tag %s is not in this clone; building its commit %s", previousTag, previousCommit)
	}
	return name, previousCommit
}

// resolveRelease returns the name to build the release tag at commit by in
// the clone at root: the tag when it is there (it must name commit), else
// the commit. A clone with neither (a shallow one) is an error that says
// so.
func resolveRelease(ctx context.Context, root, tag, commit string) (string, error) {
	if c, err := git(ctx, root, "rev-parse", "--verify", "--quiet", tag+"^{commit}"); err == nil {
		if c != commit {
			return "", fmt.Errorf("tag %s names commit %s, but the upgrade test records %s as that release: "+
				"move previousCommit in e2e/upgrade/release_test.go to the tag's commit", tag, c, commit)
		}
		return tag, nil
	}
	if _, err := git(ctx, root, "cat-file", "-e", commit+"^{commit}"); err != nil {
		return "", fmt.Errorf("neither tag %s nor its commit %s is in this clone (a shallow clone?): the upgrade test builds the previous release "+
			"from git; fetch the history (git fetch --unshallow --tags, or a CI checkout with fetch-depth 0): %w", tag, commit, err)
	}
	return commit, nil
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
	tag, commit, err := newestRelease(t.Context(), root)
	switch {
	case err != nil:
		t.Fatal(err)
	case tag == "":
		t.Logf("no v* tag but HEAD's in this clone; the upgrade test falls back to commit %s", previousCommit)
	case tag != previousTag || commit != previousCommit:
		t.Errorf("the newest release before HEAD is %s (%s), the upgrade test starts from %s (%s): "+
			"move previousTag and previousCommit in e2e/upgrade/release_test.go", tag, commit, previousTag, previousCommit)
	}
}

// newestRelease returns the newest v* tag (by version) of the clone at
// root that does not name HEAD's commit, and its commit; "" when there is
// none.
func newestRelease(ctx context.Context, root string) (tag, commit string, err error) {
	head, err := git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return "", "", err
	}
	tags, err := git(ctx, root, "tag", "--list", "v*", "--sort=-v:refname")
	if err != nil {
		return "", "", err
	}
	for tag := range strings.FieldsSeq(tags) {
		commit, err := git(ctx, root, "rev-parse", "--verify", tag+"^{commit}")
		if err != nil {
			return "", "", err
		}
		if commit != head {
			return tag, commit, nil
		}
	}
	return "", "", nil
}

// TestResolveRelease checks how the previous release is found in clones
// with and without its tag and its commit, and which tag is the newest.
func TestResolveRelease(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		missing(t, "git is not on PATH (apt-get install git)")
	}
	ctx := t.Context()
	root := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, err := git(ctx, root, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	commit := func() string {
		t.Helper()
		run("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "a commit")
		return run("rev-parse", "HEAD")
	}
	run("init", "--quiet")
	first, second := commit(), commit()
	run("tag", "v1.0.0", first)
	const absent = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		tag, commit string
		want        string // the name, or a part of the error
		wantErr     bool
	}{
		{"v1.0.0", first, "v1.0.0", false},
		{"v1.0.0", second, "move previousCommit", true},
		{"v2.0.0", second, second, false},
		{"v2.0.0", absent, "a shallow clone?", true},
	} {
		got, err := resolveRelease(ctx, root, tc.tag, tc.commit)
		switch {
		case tc.wantErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("resolveRelease(%s, %s): got %q, %v, want an error saying %q", tc.tag, tc.commit, got, err, tc.want)
		case !tc.wantErr && (err != nil || got != tc.want):
			t.Errorf("resolveRelease(%s, %s): got %q, %v, want %q", tc.tag, tc.commit, got, err, tc.want)
		}
	}

	// The newest release is the newest version tagged, HEAD's own tag
	// aside.
	for _, step := range []struct {
		tag, at     string // a tag to add first ("": none)
		newCommit   bool   // then a new commit, HEAD
		want, wantC string
	}{
		{"", "", false, "v1.0.0", first},
		{"v1.10.0", second, false, "v1.0.0", first}, // HEAD's own
		{"", "", true, "v1.10.0", second},
		{"v1.9.0", first, false, "v1.10.0", second}, // 1.9 < 1.10 by version, not by text
	} {
		if step.tag != "" {
			run("tag", step.tag, step.at)
		}
		if step.newCommit {
			commit()
		}
		tag, c, err := newestRelease(ctx, root)
		if err != nil || tag != step.want || c != step.wantC {
			t.Errorf("after tag %q, new commit %v: newestRelease = %q, %q, %v, want %q, %q", step.tag, step.newCommit, tag, c, err, step.want, step.wantC)
		}
	}
}
