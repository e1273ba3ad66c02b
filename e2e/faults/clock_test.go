package faults

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/miekg/dns"
)

// The clock-skew scenario (issue 28, finding 5): agents whose wall clocks
// are 5 s off, through the agent's test-only CAIRN_TEST_CLOCK_OFFSET
// (libfaketime does not reach Go binaries). c1 runs 5 s behind and c2
// 5 s ahead from their start; the fault restarts a follower 5 s ahead.
// When deadlines travelled as absolute times, the servers refused c1's
// every request as already late (SERVFAIL on every lookup), the follower
// ahead refused the leader's stats requests as late (never healthy to
// autopilot) and its clients' requests too, and c2's requests outlived
// their caller's wait.
const (
	clockOff     = 5 * time.Second
	clockSkewFor = 10 * time.Second
	// skewNames are services registered during the fault and looked up
	// once on every client: each first lookup misses the client's cache
	// and goes to a server, as the stable name's cached answers do not.
	skewNames = 6
	skewAddr  = "192.0.2.20"
)

// clientClocks are the clients' clock offsets in the clock-skew
// scenario, from their start.
var clientClocks = map[string]time.Duration{"c1": -clockOff, "c2": clockOff}

// clockEnv is the environment that gives an agent clock offset d.
func clockEnv(d time.Duration) []string {
	return []string{"CAIRN_TEST_CLOCK_OFFSET=" + d.String()}
}

// clockSkew is the clock-skew scenario's fault.
func clockSkew(r *run) {
	f := r.c.servers[0]
	if f == r.leader {
		f = r.c.servers[1]
	}
	r.target = r.describe(f) + " 5s ahead, c1 5s behind, c2 5s ahead"
	r.mark("SIGTERM " + f.name + ", restart it 5s ahead")
	r.c.terminate(f)
	f.env = clockEnv(clockOff)
	r.c.start(f)
	took := r.c.settle(settleLimit)
	r.faultAt = r.mark(fmt.Sprintf("%s runs 5s ahead; settled after %v", f.name, took.Round(time.Millisecond)))

	// Lookups that need a server, through every client.
	for i := range skewNames {
		name := fmt.Sprintf("skew%d", i)
		via := r.c.clients[i%len(r.c.clients)]
		body := fmt.Sprintf(`{"Node": "skew-node", "Address": %q, "Service": {"ID": %q, "Service": %q, "Port": 80}}`, skewAddr, name, name)
		err := poll(10*time.Second, 200*time.Millisecond, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			status, b, err := call(ctx, r.c.http, http.MethodPut, via.httpURL()+"/v1/catalog/register", body)
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d: %s", status, b)
			}
			return err
		})
		if err != nil {
			r.t.Fatalf("register %s through %s: %v", name, via.name, err)
		}
		for _, cl := range r.c.clients {
			// The write is committed, but a stale read may not have it
			// yet: a few seconds to answer, never SERVFAIL.
			err := poll(5*time.Second, 200*time.Millisecond, func() error { return askFresh(cl.dnsAddr(), name+".service.cluster.") })
			if err != nil {
				r.t.Errorf("%s (%v off) does not resolve %s, a name not in its cache: %v", cl.name, clientClocks[cl.name], name, err)
			}
		}
	}
	r.mark("every client resolved names not in its cache")

	// Every server healthy to autopilot, the one ahead too; the leader
	// shows each server's skew in its health report and members list.
	var last error
	err := poll(60*time.Second, 500*time.Millisecond, func() error {
		last = skewShown(r, f)
		return last
	})
	if err != nil {
		r.t.Errorf("autopilot: %v", last)
	} else {
		r.mark("every server healthy to autopilot; " + f.name + "'s skew shown in its health and the leader's members")
	}
	r.hold(clockSkewFor)

	// Writes and reads succeeded through every client while it was off.
	now := r.h.now()
	for _, cl := range r.c.clients {
		writes, reads := 0, 0
		for _, o := range r.h.snapshot() {
			if o.client != cl.name || o.outcome != ok || o.start < r.faultAt || o.end > now {
				continue
			}
			switch o.kind {
			case opWrite, opKVWrite, opRegister, opDeregister, opAgentRegister:
				writes++
			default:
				reads++
			}
		}
		r.t.Logf("%s (%v off): %d writes and %d reads acknowledged while the clocks were off", cl.name, clientClocks[cl.name], writes, reads)
		if writes == 0 || reads == 0 {
			r.t.Errorf("%s (%v off): %d writes and %d reads acknowledged in %v, want some of each", cl.name, clientClocks[cl.name], writes, reads, now-r.faultAt)
		}
	}
	r.healAt = r.mark("clocks left off for the checks")
}

// askFresh asks addr for name A once and wants skewAddr.
func askFresh(addr, name string) error {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	c := &dns.Client{Net: "udp", Timeout: probeTimeout}
	in, _, err := c.Exchange(m, addr)
	switch {
	case err != nil:
		return err
	case in.Rcode != dns.RcodeSuccess:
		return fmt.Errorf("rcode %s", dns.RcodeToString[in.Rcode])
	case len(in.Answer) == 0:
		return fmt.Errorf("no answer")
	}
	if a, isA := in.Answer[0].(*dns.A); !isA || a.A.String() != skewAddr {
		return fmt.Errorf("answer %v, want A %s", in.Answer[0], skewAddr)
	}
	return nil
}

// skewShown checks that autopilot (asked on the leader: a 429 is an
// unhealthy server) judges every server healthy and reports ahead's clock
// about clockOff ahead of the leader's, and that the leader's members
// list shows it so too.
func skewShown(r *run, ahead *agent) error {
	l, err := r.c.leader()
	if err != nil {
		return err
	}
	if l == ahead {
		return fmt.Errorf("%s, the server ahead, leads: its skew is measured by none", ahead.name)
	}
	near := func(s string) bool {
		d, err := time.ParseDuration(s)
		return err == nil && (d-clockOff).Abs() < time.Second
	}
	var health struct {
		Healthy bool
		Servers []struct {
			Name      string
			Healthy   bool
			ClockSkew string
		}
	}
	if err := r.c.get(l, "/v1/operator/autopilot/health", &health); err != nil {
		return err
	}
	if len(health.Servers) != len(r.c.servers) {
		return fmt.Errorf("health lists %d servers, want %d", len(health.Servers), len(r.c.servers))
	}
	for _, s := range health.Servers {
		switch {
		case !s.Healthy:
			return fmt.Errorf("server %s unhealthy", s.Name)
		case s.Name == ahead.name && !near(s.ClockSkew):
			return fmt.Errorf("health: %s's ClockSkew %q, want about %v", s.Name, s.ClockSkew, clockOff)
		}
	}
	var members []struct {
		Name      string
		ClockSkew string
	}
	if err := r.c.get(l, "/v1/agent/members", &members); err != nil {
		return err
	}
	for _, m := range members {
		if m.Name == ahead.name && !near(m.ClockSkew) {
			return fmt.Errorf("%s's members: %s's ClockSkew %q, want about %v", l.name, m.Name, m.ClockSkew, clockOff)
		}
	}
	return nil
}
