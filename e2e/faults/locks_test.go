package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The lock-safety test's parameters.
const (
	// lockSection is how long one critical section lasts when nothing
	// stops it.
	lockSection = 2500 * time.Millisecond
	// lockDelay is the -lock-delay of every contender: what keeps the next
	// holder out while a holder whose agent died is still stopping.
	lockDelay = 5 * time.Second
	// lockMonitorRetries is the -monitor-retries of every contender: a
	// holder whose agent died gives up after about 1.6s (two failed reads
	// of 0.3s each, 1s apart), well within lockDelay.
	lockMonitorRetries = 1
	// lockProgress is how many sections must start after each fault.
	lockProgress = 2
	// lockPrefix is the prefix every contender locks.
	lockPrefix = "e2e/lock-safety"
)

// heartbeatScript is the critical section: until lockSection has passed,
// it appends "<section> <unix nanos>" to the file every ~15ms. $SECTION
// names the run of "cairn lock" (contender and attempt), $HEARTBEATS the
// file.
var heartbeatScript = fmt.Sprintf(`end=$(( $(date +%%s%%N) + %d )); `+
	`while now=$(date +%%s%%N); [ "$now" -lt "$end" ]; do echo "$SECTION $now" >>"$HEARTBEATS"; sleep 0.015; done`,
	lockSection.Nanoseconds())

// TestLockSafety runs one "cairn lock" contender on each of three client
// agents, all for the same lock, each holding it for a critical section
// that writes heartbeats to one shared file, then taking it again. It
// kills -9 the agent of the holder mid-section, then the Raft leader while
// the lock is held, and checks from the heartbeats that no two critical
// sections ever overlapped (the holder whose agent died must stop its
// child before the lock-delay lets the next one in), that the killed
// holder's "cairn lock" reported the lost lock and stopped its child, and
// that sections go on after each fault.
func TestLockSafety(t *testing.T) {
	requireMachine(t)
	t.Parallel()
	c := newClusterOf(t, []string{"s1", "s2", "s3", "c1", "c2", "c3"}, "", nil)
	heartbeats := t.TempDir() + "/heartbeats"
	if err := os.WriteFile(heartbeats, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	contenders := make([]*contender, len(c.clients))
	for i, a := range c.clients {
		ct := &contender{name: a.name, agent: a, heartbeats: heartbeats}
		contenders[i] = ct
		wg.Go(func() { ct.loop(ctx) })
	}
	stopped := false
	stopContenders := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	t.Cleanup(stopContenders)
	byName := func(section string) *contender {
		name, _, _ := strings.Cut(section, ".")
		for _, ct := range contenders {
			if ct.name == name {
				return ct
			}
		}
		return nil
	}

	// Baseline: the lock goes round.
	waitSections(t, heartbeats, 60*time.Second, "sections before the faults", func(ss []section) bool {
		return len(ss) >= 2
	})

	// (a) kill -9 the holder's agent right after its section began.
	held := waitNewSection(t, heartbeats, 30*time.Second)
	victim := byName(held.id)
	killAt := time.Now()
	c.kill(victim.agent)
	t.Logf("+%v kill -9 %s, holding %s since %v before", killAt.Sub(begin).Round(time.Millisecond),
		victim.agent.name, held.id, killAt.Sub(held.first).Round(time.Millisecond))
	next := waitSections(t, heartbeats, 60*time.Second, "a section of another contender after the kill", func(ss []section) bool {
		return firstAfter(ss, killAt, victim.name) != nil
	})
	acquired := firstAfter(next, killAt, victim.name)
	killedSection := find(next, held.id)
	t.Logf("+%v %s acquired, %v after the kill; %s's last heartbeat was %v after the kill, %v before that",
		acquired.first.Sub(begin).Round(time.Millisecond), acquired.id, acquired.first.Sub(killAt).Round(time.Millisecond),
		held.id, killedSection.last.Sub(killAt).Round(time.Millisecond), acquired.first.Sub(killedSection.last).Round(time.Millisecond))
	if killedSection.last.Sub(killedSection.first) >= lockSection-200*time.Millisecond {
		t.Errorf("%s ran its whole section (%v) though its agent was killed %v into it: cairn lock did not stop it",
			held.id, killedSection.last.Sub(killedSection.first).Round(time.Millisecond), killAt.Sub(held.first).Round(time.Millisecond))
	}
	waitSections(t, heartbeats, 60*time.Second, "sections after the agent kill", func(ss []section) bool {
		return countAfter(ss, killAt) >= lockProgress
	})

	// (b) kill -9 the Raft leader while the lock is held.
	leader, err := c.leader()
	if err != nil {
		t.Fatalf("leader: %v", err)
	}
	during := waitNewSection(t, heartbeats, 30*time.Second)
	leaderAt := time.Now()
	c.kill(leader)
	t.Logf("+%v kill -9 leader %s while %s holds the lock", leaderAt.Sub(begin).Round(time.Millisecond), leader.name, during.id)
	after := waitSections(t, heartbeats, 60*time.Second, "sections after the leader kill", func(ss []section) bool {
		return countAfter(ss, leaderAt) >= lockProgress
	})
	resumed := firstAfter(after, leaderAt, "")
	duringSection := find(after, during.id)
	t.Logf("+%v %s acquired, %v after the leader kill; %s held on for %v after it",
		resumed.first.Sub(begin).Round(time.Millisecond), resumed.id, resumed.first.Sub(leaderAt).Round(time.Millisecond),
		during.id, duringSection.last.Sub(leaderAt).Round(time.Millisecond))

	stopContenders()
	all, err := readSections(heartbeats)
	if err != nil {
		t.Fatal(err)
	}
	bad := overlaps(all)
	if len(bad) > 0 {
		t.Errorf("critical sections overlap:\n%s", strings.Join(bad, "\n"))
	}
	for _, s := range all {
		if strings.HasPrefix(s.id, victim.name+".") && s.first.After(killAt) {
			t.Errorf("%s held the lock at %v, after its agent was killed", s.id, s.first.Sub(begin))
		}
	}
	// The killed holder's cairn lock saw the lock lost and stopped its
	// child; exiting non-zero.
	run := victim.find(held.id)
	switch {
	case run == nil:
		t.Errorf("no record of the run of %s", held.id)
	case run.err == nil || !strings.Contains(run.stderr, "lost the lock") || !strings.Contains(run.stderr, "the child was stopped"):
		t.Errorf("%s: cairn lock exited with %v, stderr %q; want it to report the lost lock and the stopped child", held.id, run.err, run.stderr)
	}
	t.Logf("%d critical sections in %v (%d after the agent kill, %d after the leader kill), %d overlapping pairs",
		len(all), time.Since(begin).Round(time.Millisecond), countAfter(all, killAt), countAfter(all, leaderAt), len(bad))
}

// contender runs "cairn lock" on one client agent again and again.
type contender struct {
	name       string
	agent      *agent
	heartbeats string

	mu   sync.Mutex
	runs []lockRun
}

// lockRun is one finished "cairn lock" process.
type lockRun struct {
	section string
	err     error
	stderr  string
}

// loop runs "cairn lock" until ctx ends; each run's section is named
// "<contender>.<attempt>". A run that ends at once (its agent is gone)
// is followed by a pause.
func (ct *contender) loop(ctx context.Context) {
	for n := 1; ctx.Err() == nil; n++ {
		section := fmt.Sprintf("%s.%d", ct.name, n)
		var stderr bytes.Buffer
		cmd := exec.Command(cairnBin, "lock", "-http-addr", ct.agent.httpURL(),
			"-lock-delay", lockDelay.String(), "-monitor-retries", strconv.Itoa(lockMonitorRetries),
			"-name", section, lockPrefix, heartbeatScript)
		cmd.Env = append(os.Environ(), "SECTION="+section, "HEARTBEATS="+ct.heartbeats)
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		start := time.Now()
		err := cmd.Start()
		if err == nil {
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-ctx.Done():
				// As an operator would: cairn lock stops its child and
				// releases.
				_ = cmd.Process.Signal(syscall.SIGTERM)
				err = <-done
			}
		}
		ct.mu.Lock()
		ct.runs = append(ct.runs, lockRun{section: section, err: err, stderr: stderr.String()})
		ct.mu.Unlock()
		if time.Since(start) < time.Second {
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

// find returns the finished run of section, or nil.
func (ct *contender) find(section string) *lockRun {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for i := range ct.runs {
		if ct.runs[i].section == section {
			r := ct.runs[i]
			return &r
		}
	}
	return nil
}

// section is one run's critical section: its first and last heartbeats.
type section struct {
	id          string
	first, last time.Time
}

// readSections reads the heartbeat file into sections, ordered by their
// first heartbeat. Only whole lines count: the last one may be being
// written.
func readSections(path string) ([]section, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	byID := map[string]*section{}
	for line := range strings.Lines(string(b)) {
		id, ns, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil || !strings.Contains(id, ".") {
			continue
		}
		at := time.Unix(0, n)
		s := byID[id]
		if s == nil {
			byID[id] = &section{id: id, first: at, last: at}
			continue
		}
		if at.Before(s.first) {
			s.first = at
		}
		if at.After(s.last) {
			s.last = at
		}
	}
	out := make([]section, 0, len(byID))
	for _, s := range byID {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b section) int { return a.first.Compare(b.first) })
	return out, nil
}

// waitSections polls the heartbeats until cond holds of the sections, and
// returns them; it fails the test after limit.
func waitSections(t *testing.T, path string, limit time.Duration, what string, cond func([]section) bool) []section {
	t.Helper()
	var ss []section
	err := poll(limit, 20*time.Millisecond, func() error {
		var err error
		if ss, err = readSections(path); err != nil {
			return err
		}
		if !cond(ss) {
			return fmt.Errorf("%d sections so far", len(ss))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return ss
}

// waitNewSection waits for a section to begin and returns it while it
// has just begun (its first heartbeat under 300ms old).
func waitNewSection(t *testing.T, path string, limit time.Duration) section {
	t.Helper()
	seen, err := readSections(path)
	if err != nil {
		t.Fatal(err)
	}
	var got section
	waitSections(t, path, limit, "a section to begin", func(ss []section) bool {
		for _, s := range ss {
			if find(seen, s.id) == nil && time.Since(s.first) < 300*time.Millisecond {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// find returns the section id, or nil.
func find(ss []section, id string) *section {
	for i := range ss {
		if ss[i].id == id {
			return &ss[i]
		}
	}
	return nil
}

// firstAfter returns the first section that began after at and is not of
// contender skip, or nil.
func firstAfter(ss []section, at time.Time, skip string) *section {
	for i := range ss {
		if ss[i].first.After(at) && (skip == "" || !strings.HasPrefix(ss[i].id, skip+".")) {
			return &ss[i]
		}
	}
	return nil
}

// countAfter counts the sections that began after at.
func countAfter(ss []section, at time.Time) int {
	n := 0
	for _, s := range ss {
		if s.first.After(at) {
			n++
		}
	}
	return n
}

// overlaps describes each pair of sections whose spans overlap; ss is
// ordered by first heartbeat, so a section can only overlap the ones
// after it that began before it ended.
func overlaps(ss []section) []string {
	var out []string
	for i, a := range ss {
		for _, b := range ss[i+1:] {
			if !b.first.After(a.last) {
				end := a.last
				if b.last.Before(end) {
					end = b.last
				}
				out = append(out, fmt.Sprintf("%s [%d, %d] and %s [%d, %d]: %v in common",
					a.id, a.first.UnixNano(), a.last.UnixNano(), b.id, b.first.UnixNano(), b.last.UnixNano(), end.Sub(b.first)))
			}
		}
	}
	return out
}

// TestLockSectionsChecker checks the heartbeat parsing and the overlap
// check on a made-up file (it runs without CAIRN_E2E).
func TestLockSectionsChecker(t *testing.T) {
	path := t.TempDir() + "/heartbeats"
	// c1.1 [100, 300], c2.1 [310, 500], c3.1 [450, 600] (overlapping
	// c2.1), c1.2 [700, 700], and a line being written.
	data := "c1.1 100\nc1.1 200\nc2.1 310\nc1.1 300\nc2.1 400\nc3.1 450\nc2.1 500\nc3.1 600\nc1.2 70"
	if err := os.WriteFile(path, []byte(data+"0\nc1.2 7"), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := readSections(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ss {
		got = append(got, fmt.Sprintf("%s %d-%d", s.id, s.first.UnixNano(), s.last.UnixNano()))
	}
	want := []string{"c1.1 100-300", "c2.1 310-500", "c3.1 450-600", "c1.2 700-700"}
	if !slices.Equal(got, want) {
		t.Errorf("sections: got %q, want %q", got, want)
	}
	bad := overlaps([]section{
		{id: "a.1", first: time.Unix(0, 100), last: time.Unix(0, 300)},
		{id: "b.1", first: time.Unix(0, 310), last: time.Unix(0, 500)},
		{id: "c.1", first: time.Unix(0, 450), last: time.Unix(0, 600)},
		{id: "a.2", first: time.Unix(0, 600), last: time.Unix(0, 700)},
	})
	if len(bad) != 2 || !strings.Contains(bad[0], "b.1") || !strings.Contains(bad[0], "c.1") || !strings.Contains(bad[0], "50ns in common") ||
		!strings.Contains(bad[1], "c.1") || !strings.Contains(bad[1], "a.2") {
		t.Errorf("overlaps: got %q, want b.1/c.1 (50ns) and c.1/a.2 (touching)", bad)
	}
}
