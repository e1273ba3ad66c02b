package upgrade

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

const (
	// dnsDeadline is how soon after a change every client's DNS must
	// answer it: "within seconds", with room for a loaded machine.
	dnsDeadline = 10 * time.Second
	// settleLimit bounds how long the cluster may take to be whole after
	// an agent is restarted.
	settleLimit = 90 * time.Second
	// resumeLimit bounds how long after a restart writes through every
	// agent may take to be acknowledged again.
	resumeLimit = 30 * time.Second
	// mixedHold is how long the cluster runs under load after each step
	// before the changes are made again: what fails only after a while
	// (a feed that breaks at its first reconnection, a periodic RPC the
	// other side does not know) has that long to show.
	mixedHold = 10 * time.Second
	// verifyLimit bounds how long the acknowledged registrations may take
	// to be in the catalog at the end (anti-entropy after a restart).
	verifyLimit = 60 * time.Second

	watchedService = "watched"
	domain         = "cluster."
)

// TestRollingUpgrade starts three servers and two clients on the previous
// release, runs a write load through every agent, and rolls them to HEAD
// one at a time (SIGTERM, then HEAD's binary on the same data dir and
// flags), servers first in one cluster and clients first in another. In
// the server phase of each it first upgrades a follower, then moves the
// leadership to it, so that an old leader with a new follower and a new
// leader with old followers are both seen. After each step the cluster
// must have a leader and be whole, writes through every agent must be
// acknowledged again, and every client's DNS must answer a new instance of
// a name it has cached and drop a deregistered one, and answer a new name,
// within dnsDeadline. Once all run HEAD, every agent must report HEAD's
// build. Servers first then rolls a follower and a client back to the
// previous release on the data HEAD wrote, with the same checks. At the
// end every acknowledged write must be there.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release and rolls two clusters to HEAD: minutes")
	}
	root := requireGit(t)
	name, commit := previousRelease(t, root)
	old := buildRelease(t, root, name, commit)
	headBin := headBinary(t)
	headRev, err := revisionOf(headBin)
	if err != nil {
		t.Fatal(err)
	}
	head := release{name: "HEAD", bin: headBin, revision: headRev}
	t.Logf("upgrading from %s (revision %s) to HEAD (revision %s)", old.name, old.revision, head.revision)
	for _, order := range []struct {
		name                   string
		clientsFirst, rollback bool
	}{{"servers-first", false, true}, {"clients-first", true, false}} {
		t.Run(order.name, func(t *testing.T) {
			t.Parallel()
			roll(t, old, head, order.clientsFirst, order.rollback)
		})
	}
}

// roll runs one order of the upgrade on a cluster of its own. With
// rollback set, a server goes back to the previous release and forward
// again while another still runs it, and a client goes back at the end.
func roll(t *testing.T, old, head release, clientsFirst, rollback bool) {
	begin := time.Now()
	c := newCluster(t, old)
	t.Logf("cluster on %s settled in %v", old.name, time.Since(begin).Round(time.Millisecond))
	l := startLoad(c)
	p := &prober{c: c}
	p.check(t, "all on "+old.name, c.clients[0], c.clients[1])
	p.hold(t, "all on "+old.name, c.clients[0])

	step := 0
	restart := func(a *agent, rel release) {
		t.Helper()
		step++
		stepBegin := time.Now()
		c.terminate(a)
		c.start(a, rel)
		restarted := time.Now()
		settled := c.settle(settleLimit)
		what := fmt.Sprintf("step %d: %s on %s (%s)", step, a.name, rel.name, c.versions())
		dnsTook := p.check(t, what, a, p.otherThan(a))
		resumed := l.ackedSince(t, restarted, resumeLimit)
		l.serversHold(t, what, resumeLimit)
		t.Logf("%s: settled %v after its restart, DNS current in %v, writes through every agent acknowledged again (the last: %s)",
			what, settled.Round(time.Millisecond), dnsTook.Round(time.Millisecond), resumed)
		p.hold(t, what, a)
		t.Logf("%s: step took %v", what, time.Since(stepBegin).Round(time.Millisecond))
	}
	servers := func() {
		t.Helper()
		leader, err := c.leader()
		if err != nil {
			t.Fatal(err)
		}
		rest := slices.DeleteFunc(slices.Clone(c.servers), func(s *agent) bool { return s == leader })
		first := rest[0]
		restart(first, head) // an old leader, a new follower
		c.transferLeadership(first)
		what := fmt.Sprintf("step %d: leader %s moved to %s (%s)", step, leader.name, first.name, c.versions())
		p.check(t, what, first, p.otherThan(first))
		l.serversHold(t, what, resumeLimit)
		p.hold(t, what, first)
		rolledBack := false
		for _, s := range c.servers {
			if s == first {
				continue
			}
			restart(s, head) // a new leader, old followers
			if rollback && !rolledBack {
				// Back and forth while an old server remains: the
				// cluster writes no entry the previous release cannot
				// read until every server runs HEAD, so until then a
				// server rolls back in place.
				restart(s, old)
				restart(s, head)
				rolledBack = true
			}
		}
	}
	clients := func() {
		t.Helper()
		for _, a := range c.clients {
			restart(a, head)
		}
	}
	if clientsFirst {
		clients()
		servers()
	} else {
		servers()
		clients()
	}

	c.checkBuilds(t, old, head)
	t.Logf("rolled to %s in %v", head.name, time.Since(begin).Round(time.Second))
	if rollback {
		// A client holds no log: it rolls back at any time.
		restart(c.clients[1], old)
	}
	l.verify(t, verifyLimit)
	c.checkLogs(t)
}

// versions says which agents run which release now.
func (c *cluster) versions() string {
	by := map[string][]string{}
	var rels []string
	for _, a := range c.all {
		if _, ok := by[a.rel.name]; !ok {
			rels = append(rels, a.rel.name)
		}
		by[a.rel.name] = append(by[a.rel.name], a.name)
	}
	parts := make([]string, len(rels))
	for i, r := range rels {
		parts[i] = strings.Join(by[r], " ") + " on " + r
	}
	return strings.Join(parts, ", ")
}

// prober makes a change at each step and waits for every client's DNS to
// answer it: a new instance of watchedService (a name every client has
// cached since the first step, so that only its cache's change feed can
// bring the news), the deregistration of the previous one, and a name
// never asked before.
type prober struct {
	c       *cluster
	step    int
	watched *agent // where the last watched instance is registered
}

// otherThan returns an agent on a different release than a, to register
// the fresh name through (the other side of the version line), or a
// client other than a when all run one release.
func (p *prober) otherThan(a *agent) *agent {
	for _, b := range p.c.all {
		if b.rel.name != a.rel.name {
			return b
		}
	}
	for _, b := range p.c.clients {
		if b != a {
			return b
		}
	}
	return a
}

// check registers instance w<step> of watchedService through via,
// deregisters the previous one, registers the name fresh<step> through
// other, and waits until every client's DNS answers all three changes. It
// returns how long that took.
func (p *prober) check(t *testing.T, what string, via, other *agent) time.Duration {
	t.Helper()
	c := p.c
	p.step++
	id, port := fmt.Sprintf("w%d", p.step), 20000+p.step
	prevPort := port - 1
	fresh, freshPort := fmt.Sprintf("fresh%d", p.step), 30000+p.step
	// A registration through an agent just restarted may meet it before
	// it has found a server; the agent API then still stores it.
	mustSend(t, c, via, http.MethodPut, "/v1/agent/service/register",
		map[string]any{"ID": id, "Name": watchedService, "Port": port})
	begin := time.Now()
	if p.watched != nil {
		mustSend(t, c, p.watched, http.MethodPut, fmt.Sprintf("/v1/agent/service/deregister/w%d", p.step-1), nil)
	}
	p.watched = via
	mustSend(t, c, other, http.MethodPut, "/v1/agent/service/register",
		map[string]any{"ID": fresh, "Name": fresh, "Port": freshPort})

	var wg sync.WaitGroup
	errs := make([]error, len(c.clients))
	for i, client := range c.clients {
		wg.Go(func() {
			addr := c.dnsAddr(client)
			errs[i] = poll(dnsDeadline, 50*time.Millisecond, func() error {
				ports, err := srvPorts(addr, watchedService+".service."+domain)
				if err != nil {
					return err
				}
				if !slices.Contains(ports, port) || (p.step > 1 && slices.Contains(ports, prevPort)) {
					return fmt.Errorf("%s answers ports %v, want %d (%s via %s) and not %d (deregistered)",
						watchedService, ports, port, id, via.name, prevPort)
				}
				ports, err = srvPorts(addr, fresh+".service."+domain)
				if err != nil {
					return err
				}
				if !slices.Equal(ports, []int{freshPort}) {
					return fmt.Errorf("%s answers ports %v, want [%d] (registered via %s)", fresh, ports, freshPort, other.name)
				}
				return nil
			})
		})
	}
	wg.Wait()
	took := time.Since(begin)
	for i, err := range errs {
		if err != nil {
			cl := c.clients[i]
			t.Errorf("%s: client %s (on %s)'s DNS is not current: %v", what, cl.name, cl.rel.name, err)
		}
	}
	return took
}

// hold lets the cluster run for mixedHold while every client's DNS is
// asked for watchedService every 100 ms, each answer holding the current
// instance and nothing else, and then makes the changes of check again,
// through via. A question without an answer in time is forgiven, unless
// more than a fifth go so: on a busy machine a UDP answer can be late,
// where a wrong one never should be.
func (p *prober) hold(t *testing.T, what string, via *agent) {
	t.Helper()
	c := p.c
	want := []int{20000 + p.step}
	var wg sync.WaitGroup
	for _, client := range c.clients {
		wg.Go(func() {
			addr := c.dnsAddr(client)
			n, wrong, late := 0, 0, 0
			var first, firstLate error
			for end := time.Now().Add(mixedHold); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				n++
				ports, err := srvPorts(addr, watchedService+".service."+domain)
				var netErr net.Error
				switch {
				case errors.As(err, &netErr) && netErr.Timeout():
					late++
					if firstLate == nil {
						firstLate = err
					}
					continue
				case err == nil && !slices.Equal(ports, want):
					err = fmt.Errorf("%s answers ports %v, want %v", watchedService, ports, want)
				}
				if err != nil {
					wrong++
					if first == nil {
						first = fmt.Errorf("at %s: %w", time.Now().Format("15:04:05.000"), err)
					}
				}
			}
			if wrong > 0 {
				t.Errorf("%s: client %s (on %s) answered %d of %d questions wrong in the %v after; the first: %v",
					what, client.name, client.rel.name, wrong, n, mixedHold, first)
			}
			if late*5 > n {
				t.Errorf("%s: client %s (on %s) left %d of %d questions unanswered in time in the %v after; the first: %v",
					what, client.name, client.rel.name, late, n, mixedHold, firstLate)
			}
		})
	}
	wg.Wait()
	p.check(t, what+", "+mixedHold.String()+" later", via, p.otherThan(via))
}

// mustSend is cluster.send retried for a few seconds, failing the test
// when the agent never acknowledges.
func mustSend(t *testing.T, c *cluster, a *agent, method, path string, body any) {
	t.Helper()
	if err := poll(15*time.Second, 200*time.Millisecond, func() error { return c.send(a, method, path, body) }); err != nil {
		t.Fatalf("%s %s through %s (on %s): %v", method, path, a.name, a.rel.name, err)
	}
}

// srvPorts asks the DNS server at addr for name's SRV records and returns
// their ports, sorted; NXDOMAIN and an empty answer are no ports, any
// other rcode an error.
func srvPorts(addr, name string) ([]int, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeSRV)
	cl := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	r, _, err := cl.Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("SRV %s at %s: %w", name, addr, err)
	}
	if r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("SRV %s at %s: %s", name, addr, dns.RcodeToString[r.Rcode])
	}
	var ports []int
	for _, rr := range r.Answer {
		if srv, ok := rr.(*dns.SRV); ok {
			ports = append(ports, int(srv.Port))
		}
	}
	slices.Sort(ports)
	return ports, nil
}

// checkBuilds checks that no agent reports the previous release's
// revision, in /v1/agent/self or in the build tag of /v1/agent/members,
// and that every one reports HEAD's where HEAD's binary has one.
func (c *cluster) checkBuilds(t *testing.T, old, head release) {
	t.Helper()
	switch {
	case old.revision == "unknown":
		t.Errorf("%s's binary has no VCS revision: the agents' builds cannot be told apart", old.name)
		return
	case head.revision == old.revision:
		t.Logf("HEAD is %s's commit: the agents' builds cannot be told apart", old.name)
		return
	}
	if head.revision == "unknown" {
		t.Logf("HEAD's binary has no VCS revision (a git worktree, or GOFLAGS=-buildvcs=false): checking only that no agent reports %s's", old.name)
	}
	runs := func(reported string) error {
		switch {
		case reported == "":
			return errors.New("none")
		case strings.Contains(reported, old.revision):
			return fmt.Errorf("%s's revision", old.name)
		case head.revision != "unknown" && !strings.Contains(reported, head.revision):
			return fmt.Errorf("want HEAD's %s", head.revision)
		}
		return nil
	}
	for _, a := range c.all {
		var self struct {
			Config struct{ Revision string }
			Stats  map[string]map[string]string
		}
		if err := c.get(a, "/v1/agent/self", &self); err != nil {
			t.Errorf("%s: %v", a.name, err)
			continue
		}
		rev := cmp.Or(self.Config.Revision, self.Stats["build"]["revision"])
		if err := runs(rev); err != nil {
			t.Errorf("%s reports revision %q in /v1/agent/self: %v", a.name, rev, err)
		}
	}
	var members []struct {
		Name string
		Tags map[string]string
	}
	if err := c.get(c.servers[0], "/v1/agent/members", &members); err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if err := runs(m.Tags["build"]); err != nil {
			t.Errorf("member %s gossips build %q: %v", m.Name, m.Tags["build"], err)
		}
	}
}

// checkLogs fails the test on the signs of a version mismatch in any
// agent's log (an RPC the other side does not know) and lists every
// ERROR line the agents logged, which a reader of a failure needs.
func (c *cluster) checkLogs(t *testing.T) {
	t.Helper()
	for _, a := range c.all {
		b, err := os.ReadFile(a.logPath)
		if err != nil {
			t.Error(err)
			continue
		}
		var errLines []string
		for line := range strings.Lines(string(b)) {
			line = strings.TrimSpace(line)
			switch {
			case strings.Contains(line, "can't find method") || strings.Contains(line, "can't find service"):
				t.Errorf("%s logged an RPC its peer does not know (a version mismatch): %s", a.name, line)
			case strings.Contains(line, "level=ERROR"):
				errLines = append(errLines, line)
			}
		}
		if len(errLines) > 0 {
			t.Logf("%s logged %d ERROR lines, the first ones:\n%s", a.name, len(errLines), strings.Join(errLines[:min(10, len(errLines))], "\n"))
		}
	}
}
