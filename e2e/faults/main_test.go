package faults

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cairndns/cairn/e2e/e2etest"
)

// cairnBin is the cairn binary TestMain builds (without -race, whatever
// the tests run with: the agents' timing is what is measured).
var cairnBin string

// enabled says CAIRN_E2E=1: the suite runs, and a machine that cannot run
// it fails it. Without it every test is skipped and nothing is built.
var enabled = os.Getenv("CAIRN_E2E") == "1"

// targetsEnforced says CAIRN_FAULT_TARGETS=1: the availability targets of
// issue 15 are assertions, not only printed.
var targetsEnforced = os.Getenv("CAIRN_FAULT_TARGETS") == "1"

// nsPrefix starts the name of every network namespace this package
// creates; the test process's PID follows, so that a later run can tell
// the namespaces of a run that died (and left them) from those of one
// still running.
const nsPrefix = "cfault-"

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	if !enabled {
		return m.Run() // every test skips
	}
	sweepStaleNamespaces()
	if bin := os.Getenv("CAIRN_FAULTS_BIN"); bin != "" {
		// A binary built elsewhere: another commit's, or one built while
		// the work tree does not compile.
		abs, err := filepath.Abs(bin)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults: CAIRN_FAULTS_BIN:", err)
			return 1
		}
		cairnBin = abs
		return m.Run()
	}
	bin, cleanup, err := e2etest.BuildCairn("cairn-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer cleanup()
	cairnBin = bin
	return m.Run()
}

// requireMachine skips the test without CAIRN_E2E=1 and fails it when the
// machine cannot run it: root, ip (iproute2) and iptables are needed.
func requireMachine(t *testing.T) {
	t.Helper()
	if !enabled {
		t.Skip("the fault suite runs only with CAIRN_E2E=1 (it needs root, ip and iptables, and takes minutes)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the fault suite needs root for network namespaces; required when CAIRN_E2E=1")
	}
	for _, tool := range []struct{ name, pkg string }{{"ip", "iproute2"}, {"iptables", "iptables"}} {
		if _, err := lookTool(tool.name); err != nil {
			t.Fatalf("%s is required when CAIRN_E2E=1; apt-get install %s", tool.name, tool.pkg)
		}
	}
}

// lookTool finds a program on PATH or in the sbin directories, which a
// non-login PATH may lack.
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// sweepStaleNamespaces deletes the namespaces that a run of this package
// whose process is gone left behind (one killed by go test's -timeout has
// no cleanups). Deleting a namespace deletes its veths, and the hub's
// deletion the bridge and the host's veth.
func sweepStaleNamespaces() {
	ip, err := lookTool("ip")
	if err != nil {
		return
	}
	out, err := exec.Command(ip, "netns", "list").Output()
	if err != nil {
		return
	}
	for line := range strings.Lines(string(out)) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || processAlive(pid) {
			continue
		}
		// Agents still running there (their parent-death signal should
		// have ended them) would keep the namespace alive.
		if pids, err := exec.Command(ip, "netns", "pids", name).Output(); err == nil {
			for _, f := range strings.Fields(string(pids)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if out, err := exec.Command(ip, "netns", "delete", name).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "faults: delete stale namespace %s: %v: %s\n", name, err, bytes.TrimSpace(out))
		}
	}
}

// processAlive reports whether a process with this PID exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
