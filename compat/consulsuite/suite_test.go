package consulsuite_test

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "write this run's results into "+listFile)

// packages maps the list's package names to the suite's import paths.
var packages = map[string]string{
	"api":   "github.com/hashicorp/consul/api",
	"watch": "github.com/hashicorp/consul/api/watch",
}

// testTimeout bounds one test of the suite; a test that hangs against
// cairn fails after it instead of holding up the run.
const testTimeout = time.Minute

// TestConsulAPISuite runs every in-scope test of Consul's api suite
// against cairn, each in a process of its own (a panic or a hang ends one
// test, not the run), several at once, and compares the results with the
// list: a test listed as passing that fails (twice) is a regression and
// fails this test; one listed as failing that passes is reported, for the
// list to be updated (-update writes it).
//
// CAIRN_CONSUL_SUITE=1 turns it on; CAIRN_CONSUL_SUITE_PARALLEL sets how
// many tests run at once (default 8: they mostly wait on their servers);
// CAIRN_CONSUL_SUITE_RUN, a regular expression, runs only the tests whose
// names it matches; CAIRN_CONSUL_SUITE_OUT names a directory to keep each
// test's output in.
func TestConsulAPISuite(t *testing.T) {
	if os.Getenv("CAIRN_CONSUL_SUITE") == "" {
		t.Skip("set CAIRN_CONSUL_SUITE=1 to run Consul's api test suite against cairn (.ci/run does)")
	}
	l, err := readList(listFile)
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dirs := packageDirs(t, root)
	checkComplete(t, l, dirs)
	if t.Failed() {
		return
	}

	start := time.Now()
	bin := t.TempDir()
	build(t, root, bin)
	t.Logf("built cairn, the shim and the suite in %s", time.Since(start).Round(time.Second))

	parallel := 8
	if v := os.Getenv("CAIRN_CONSUL_SUITE_PARALLEL"); v != "" {
		if parallel, err = strconv.Atoi(v); err != nil || parallel < 1 {
			t.Fatalf("CAIRN_CONSUL_SUITE_PARALLEL=%q: want a positive number", v)
		}
	}
	var only *regexp.Regexp
	if v := os.Getenv("CAIRN_CONSUL_SUITE_RUN"); v != "" {
		if only, err = regexp.Compile(v); err != nil {
			t.Fatalf("CAIRN_CONSUL_SUITE_RUN: %v", err)
		}
	}
	r := &runner{bin: bin, tmp: t.TempDir(), env: suiteEnv(bin), out: os.Getenv("CAIRN_CONSUL_SUITE_OUT")}
	if r.dirs, err = workDirs(r.tmp); err != nil {
		t.Fatal(err)
	}
	if r.out != "" {
		if err := os.MkdirAll(r.out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runStart := time.Now()
	results := r.runAll(l, only, parallel)
	t.Logf("ran %d tests, %d at once, in %s", len(results), parallel, time.Since(runStart).Round(time.Second))
	compare(t, l, results)
	if *update {
		if err := l.write(listFile); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", listFile)
	}
}

// packageDirs finds the source directory of each package of the suite in
// the module cache.
func packageDirs(t *testing.T, root string) map[string]string {
	t.Helper()
	dirs := map[string]string{}
	for name, path := range packages {
		cmd := exec.Command("go", "list", "-f", "{{.Dir}}", path)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", path, err)
		}
		dirs[name] = strings.TrimSpace(string(out))
	}
	return dirs
}

// checkComplete makes sure the list names every test of the suite once,
// and nothing else, so a new version of the module cannot add tests
// unnoticed.
func checkComplete(t *testing.T, l *list, dirs map[string]string) {
	t.Helper()
	listed := map[string]bool{}
	for _, e := range l.entries {
		key := e.pkg + " " + e.name
		if listed[key] {
			t.Errorf("%s: %s listed twice", listFile, key)
		}
		listed[key] = true
	}
	for pkg, dir := range dirs {
		names, err := suiteTests(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			key := pkg + " " + n
			if !listed[key] {
				t.Errorf("%s: %s is a test of the suite but is not listed", listFile, key)
			}
			delete(listed, key)
		}
	}
	for key := range listed {
		t.Errorf("%s: %s is listed but is no test of the suite", listFile, key)
	}
}

// build puts into bin: cairn, the shim as consul, and the suite's test
// binaries.
func build(t *testing.T, root, bin string) {
	t.Helper()
	steps := [][]string{
		{"go", "build", "-o", filepath.Join(bin, "cairn"), "./cmd/cairn"},
		{"go", "build", "-o", filepath.Join(bin, "consul"), "./compat/consulsuite/consulshim"},
	}
	for name, path := range packages {
		steps = append(steps, []string{"go", "test", "-c", "-o", filepath.Join(bin, name+".test"), path})
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(s, " "), err, out)
		}
	}
}

// suiteEnv is the environment of the suite's tests: the shim first on
// PATH as consul, and none of the CONSUL_ variables that Consul's client
// would read.
func suiteEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CONSUL_") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "CAIRN_BIN=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CAIRN_BIN="+filepath.Join(bin, "cairn"))
}

// result is how one test of the suite went.
type result struct {
	entry  *entry
	passed bool
	reason string // why it failed: its first error line
	output []byte
	took   time.Duration
	reruns int
}

type runner struct {
	bin, tmp string
	out      string            // where each test's output is kept, if set
	dirs     map[string]string // each package's working directory
	env      []string
}

// workDirs makes the working directories of the suite's packages under
// tmp, laid out as in Consul's repository: api and api/watch, beside
// test/client_certs, which the module does not ship and which
// writeClientCerts makes. The tests read nothing else relative to their
// directory.
func workDirs(tmp string) (map[string]string, error) {
	root := filepath.Join(tmp, "consul")
	dirs := map[string]string{"api": filepath.Join(root, "api"), "watch": filepath.Join(root, "api", "watch")}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := writeClientCerts(filepath.Join(root, "test", "client_certs")); err != nil {
		return nil, err
	}
	return dirs, nil
}

// runAll runs the in-scope tests of l (those only matches, when set),
// parallel at once, in the list's order. A test listed as passing that fails is run once more before it
// counts as failed: Consul's tests wait with fixed deadlines, which a
// loaded machine can miss.
func (r *runner) runAll(l *list, only *regexp.Regexp, parallel int) []*result {
	var results []*result
	for _, e := range l.entries {
		if e.status != statusOut && (only == nil || only.MatchString(e.name)) {
			results = append(results, &result{entry: e})
		}
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, res := range results {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r.run(res, i)
			if !res.passed && res.entry.status == statusPass {
				res.reruns++
				r.run(res, i)
			}
		})
	}
	wg.Wait()
	return results
}

// run runs one test in a process of its own, in its package's working
// directory (workDirs).
func (r *runner) run(res *result, i int) {
	e := res.entry
	tmp := filepath.Join(r.tmp, fmt.Sprintf("%d-%d", i, res.reruns))
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		res.passed, res.reason = false, err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.bin, e.pkg+".test"),
		"-test.run", "^"+e.name+"$", "-test.v", "-test.count=1", "-test.timeout", testTimeout.String())
	cmd.Dir = r.dirs[e.pkg]
	cmd.Env = append(r.env, "TMPDIR="+tmp)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	res.took = time.Since(start)
	res.output = out
	res.passed = err == nil && bytes.Contains(out, []byte("--- PASS: "+e.name+" "))
	res.reason = ""
	if !res.passed {
		res.reason = failureReason(out, err)
	}
	if r.out != "" {
		name := fmt.Sprintf("%s.%s.%d.log", e.pkg, e.name, res.reruns)
		_ = os.WriteFile(filepath.Join(r.out, name), out, 0o644)
	}
}

var (
	// The line an error of a test starts on: "    kv_test.go:51: err: …"
	// (t.Error; testify's report follows on the next lines) or, inside
	// retry.Run, "    retry.go:219: retry.go:62: …".
	errLine  = regexp.MustCompile(`^\s+(\w+_test\.go:\d+: ?.*|retry\.go:\d+: ?.*)$`)
	retryPos = regexp.MustCompile(`retry\.go:\d+: ?`)
	// A line that testutil logs, which retry.Run repeats.
	logLine = regexp.MustCompile(`^\w+\.go:\d+: `)
	// The first line of a panic, and of a test that ran out of time.
	panicLine   = regexp.MustCompile(`^panic: (.*)$`)
	timeoutLine = regexp.MustCompile(`^panic: test timed out after (.*)$`)
)

// failureReason picks what says why a test failed: the first error line
// (with testify's report after it), else the panic, else how the process
// ended.
func failureReason(out []byte, err error) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	var first, panicked string
	for i, line := range lines {
		if m := timeoutLine.FindStringSubmatch(line); m != nil {
			return "hangs: timed out after " + m[1]
		}
		if m := panicLine.FindStringSubmatch(line); m != nil && panicked == "" {
			panicked = "panics: " + m[1]
		}
		if first != "" {
			continue
		}
		if m := errLine.FindStringSubmatch(line); m != nil {
			msg := strings.TrimSpace(retryPos.ReplaceAllString(m[1], ""))
			if logLine.MatchString(msg) && !strings.Contains(msg[:strings.Index(msg, ":")], "_test.go") {
				continue
			}
			if msg == "" || strings.HasSuffix(msg, ":") {
				msg = strings.TrimSpace(msg + " " + testifyDetail(lines[i+1:]))
			}
			first = msg
		}
	}
	switch {
	case panicked != "":
		return trim(panicked)
	case first != "":
		return trim(first)
	case err != nil:
		return trim(err.Error())
	}
	return "no PASS line"
}

// testifyDetail sums up the testify report that starts lines: its Error
// and Messages, and the changed lines of its Diff (else its expected and
// actual lines).
func testifyDetail(lines []string) string {
	var msgs, values, diff []string
	label, inDiff := "", false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Test:") || strings.HasPrefix(l, "--- FAIL") {
			break
		}
		for _, lb := range []string{"Error Trace:", "Error:", "Messages:"} {
			if rest, ok := strings.CutPrefix(l, lb); ok {
				label, l, inDiff = lb, strings.TrimSpace(rest), false
			}
		}
		switch {
		case l == "" || label == "Error Trace:":
		case l == "Diff:":
			inDiff = true
		case inDiff:
			if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
				diff = append(diff, l)
			}
		case strings.HasPrefix(l, "expected:") || strings.HasPrefix(l, "actual"):
			values = append(values, l)
		default:
			msgs = append(msgs, l)
		}
	}
	if len(diff) > 0 {
		values = diff
	}
	return strings.Join(append(msgs, values...), "; ")
}

func trim(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = strings.ToValidUTF8(s[:240], "") + "…"
	}
	return s
}

// compare reports the results against the list, and, for -update, sets
// the list's statuses from them.
func compare(t *testing.T, l *list, results []*result) {
	t.Helper()
	var pass, fail, regressions, fixed int
	for _, res := range results {
		e := res.entry
		switch {
		case res.passed:
			pass++
		default:
			fail++
		}
		switch {
		case e.status == statusPass && !res.passed:
			regressions++
			t.Errorf("regression: %s %s failed (twice): %s\n%s", e.pkg, e.name, res.reason, tail(res.output, 40))
		case e.status == statusPass && res.reruns > 0:
			t.Logf("flaky: %s %s failed once, then passed", e.pkg, e.name)
		case e.status == statusFail && res.passed:
			fixed++
			t.Logf("newly passing: %s %s (listed as failing: %s); mark it pass in %s", e.pkg, e.name, e.reason, listFile)
		}
		if *update {
			switch {
			case res.passed:
				e.status, e.reason = statusPass, ""
			case e.status != statusFail:
				// A person sorts it into a group: what it points to.
				e.status, e.reason = statusFail, "[unsorted] "+res.reason
			}
		}
	}
	t.Logf("in scope %d: %d pass, %d fail; %d regressions, %d newly passing (GOMAXPROCS %d)",
		len(results), pass, fail, regressions, fixed, runtime.GOMAXPROCS(0))
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
