package faults

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// The full-disk scenario: a follower is restarted on a small tmpfs
// holding a copy of its data dir (sparse, as raft-wal preallocates its
// segments), the tmpfs is filled while writes go on, and then freed.
const (
	tmpfsSize  = 48 << 20
	fullFor    = 10 * time.Second
	reportedIn = 30 * time.Second // for the full server to report its storage unhealthy
)

// fullDisk is the full-disk scenario's fault.
func fullDisk(r *run) {
	f := r.c.servers[0]
	if f == r.leader {
		f = r.c.servers[1]
	}
	r.target = r.describe(f)
	r.mark("SIGTERM " + f.name + ", restart it on a tmpfs")
	r.c.terminate(f)
	moveToTmpfs(r, f)
	r.c.start(f)
	if took := r.c.settle(settleLimit); took >= settleLimit {
		r.t.Fatalf("%s did not rejoin from its tmpfs", f.name)
	}
	r.faultAt = r.mark("fill " + f.name + "'s disk")
	free := fill(r, f.dataDir)
	deadline := time.Now().Add(reportedIn)
	for !storageIs(r, f, false) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s still reports its Raft storage healthy %v after its disk filled", f.name, reportedIn)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.mark(f.name + " reports its Raft storage unhealthy")
	r.hold(fullFor)
	r.healAt = r.mark("free " + f.name + "'s disk")
	free()
	// It writes again by itself, without a restart.
	deadline = time.Now().Add(reportedIn)
	for !storageIs(r, f, true) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s still reports its Raft storage unhealthy %v after its disk was freed", f.name, reportedIn)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.mark(f.name + " reports its Raft storage healthy again")
}

// moveToTmpfs mounts a tmpfs, copies a's data dir onto it and points a's
// -data-dir there. The mount goes when the test ends (lazily: the agent
// may still run).
func moveToTmpfs(r *run, a *agent) {
	dir := a.dataDir + "-tmpfs"
	if err := os.Mkdir(dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", tmpfsSize), "tmpfs", dir).CombinedOutput(); err != nil {
		r.t.Fatalf("mount a tmpfs for %s: %v: %s", a.name, err, out)
	}
	r.t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	if out, err := exec.Command("cp", "-a", "--sparse=always", a.dataDir+"/.", dir).CombinedOutput(); err != nil {
		r.t.Fatalf("copy %s's data dir: %v: %s", a.name, err, out)
	}
	i := slices.Index(a.args, "-data-dir")
	a.args[i+1], a.dataDir = dir, dir
}

// fill writes a file in dir until its file system is full, and returns
// a func that removes it.
func fill(r *run, dir string) (free func()) {
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		r.t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for n := len(buf); n >= 512; n /= 2 {
		for err == nil {
			_, err = f.Write(buf[:n])
		}
		if !errors.Is(err, syscall.ENOSPC) {
			r.t.Fatalf("fill %s: %v", dir, err)
		}
		err = nil
	}
	_ = f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			r.t.Errorf("free %s: %v", dir, err)
		}
	}
}

// storageIs reports whether a's cairn_raft_storage_healthy says healthy
// is its state (false when it cannot be read).
func storageIs(r *run, a *agent, healthy bool) bool {
	var m struct {
		Gauges []struct {
			Name  string
			Value float64
		}
	}
	if err := r.c.get(a, "/v1/agent/metrics", &m); err != nil {
		return false
	}
	for _, g := range m.Gauges {
		if g.Name == "cairn_raft_storage_healthy" {
			return (g.Value == 1) == healthy
		}
	}
	return false
}
