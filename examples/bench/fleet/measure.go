package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/internal/clock"
)

// grow adds members up to n, each with its own service registered, and
// waits until the cluster has settled around them.
func (b *bench) grow(ctx context.Context, n int) error {
	first := len(b.f.members)
	stop, err := b.profile(n, "grow")
	if err != nil {
		return err
	}
	defer stop()
	if err := b.f.grow(ctx, b.o.net, n, b.o.parallel); err != nil {
		return err
	}
	if err := each(b.f.members[first:], b.o.parallel, b.registerOwn(ctx)); err != nil {
		return err
	}
	return b.settle(ctx)
}

// registerOwn returns the call that registers a member's own service
// through its HTTP API. A 503 is taken as success: the agent has stored
// the registration and keeps pushing it to the servers, and settle waits
// for it to reach the catalog.
func (b *bench) registerOwn(ctx context.Context) func(*member) error {
	return func(m *member) error {
		status, err := b.f.call(ctx, b.f.http, m.target(), http.MethodPut, "/v1/agent/service/register", fmt.Sprintf(`{"Name":%q,"Port":8080}`, m.service()))
		if status == http.StatusServiceUnavailable {
			return nil
		}
		return err
	}
}

// settle waits until the leader's catalog holds every running agent's node
// and service with nothing critical, and a few members see every agent
// alive in gossip.
func (b *bench) settle(ctx context.Context) error {
	live := b.f.live()
	want := len(live) + len(b.servers)
	return b.c.Poll(ctx, 250*time.Millisecond, fmt.Sprintf("%d nodes in the catalog, passing, alive in gossip", want), func(ctx context.Context) (bool, error) {
		leader := b.leader(ctx)
		if leader == nil {
			return false, fmt.Errorf("no leader")
		}
		var nodes []struct{ Node string }
		if err := b.c.Call(ctx, leader, http.MethodGet, "/v1/catalog/nodes", "", &nodes); err != nil {
			return false, err
		}
		agents := 0
		for _, n := range nodes {
			if !strings.HasPrefix(n.Node, "ext-") { // the feed windows' external nodes
				agents++
			}
		}
		if agents != want {
			return false, fmt.Errorf("%d agents' nodes in the catalog", agents)
		}
		var critical []struct{ Node, CheckID string }
		if err := b.c.Call(ctx, leader, http.MethodGet, "/v1/health/state/critical", "", &critical); err != nil {
			return false, err
		} else if len(critical) != 0 {
			return false, fmt.Errorf("%d checks critical, the first %s on %s", len(critical), critical[0].CheckID, critical[0].Node)
		}
		var services map[string]json.RawMessage
		if err := b.c.Call(ctx, leader, http.MethodGet, "/v1/catalog/services", "", &services); err != nil {
			return false, err
		}
		for _, m := range live {
			if _, ok := services[m.service()]; !ok {
				return false, fmt.Errorf("%s not in the catalog", m.service())
			}
		}
		for _, m := range []*member{live[0], live[len(live)/2], live[len(live)-1]} {
			if alive, err := b.aliveSeenBy(ctx, m); err != nil {
				return false, err
			} else if alive < want {
				return false, fmt.Errorf("%s sees %d members alive", m.name, alive)
			}
		}
		return true, nil
	})
}

// aliveSeenBy counts the members m's gossip sees alive.
func (b *bench) aliveSeenBy(ctx context.Context, m *member) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.ip+":8500/v1/agent/members", nil)
	if err != nil {
		return 0, err
	}
	resp, err := b.f.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var members []struct{ Status int }
	if err := json.NewDecoder(resp.Body).Decode(&members); err != nil {
		return 0, fmt.Errorf("members of %s: %w", m.name, err)
	}
	alive := 0
	for _, x := range members {
		if x.Status == 1 { // serf's StatusAlive
			alive++
		}
	}
	return alive, nil
}

// leader is the server every server names as the leader, or nil.
func (b *bench) leader(ctx context.Context) *loopback.Agent {
	name := ""
	for _, s := range b.servers {
		l := b.c.Leader(ctx, s)
		if l == "" || (name != "" && l != name) {
			return nil
		}
		name = l
	}
	return b.c.Agent(name)
}

// usage is what the processes had spent at one moment: each server's CPU
// and LAN gossip counters, this process's CPU and the members' gossip
// counters (process-wide).
type usage struct {
	at         time.Time
	serverCPU  []time.Duration
	serverSent []float64
	selfCPU    time.Duration
	sent       float64
	udp, tcp   float64 // sent, of which over UDP (probes, gossip) and TCP (push/pull syncs)
}

func (b *bench) sample(ctx context.Context) (usage, error) {
	u := usage{at: time.Now()}
	for _, s := range b.servers {
		cpu, _, _, err := loopback.Sample(s.PID())
		if err != nil {
			return u, err
		}
		c, err := b.gossipCounters(ctx, "http://"+s.IP+":8500")
		if err != nil {
			return u, err
		}
		u.serverCPU = append(u.serverCPU, cpu)
		u.serverSent = append(u.serverSent, c["sent"])
	}
	cpu, _, _, err := loopback.Sample(os.Getpid())
	if err != nil {
		return u, err
	}
	u.selfCPU = cpu
	c, err := b.gossipCounters(ctx, "http://"+b.f.live()[0].ip+":8500")
	if err != nil {
		return u, err
	}
	u.sent, u.udp, u.tcp = c["sent"], c["udp"], c["tcp"]
	return u, nil
}

// gossipCounters reads the LAN pool's bytes sent over UDP (probes and
// gossip) and TCP (push/pull syncs, fallback probes) from an agent's
// Prometheus metrics; "sent" is their sum. (memberlist counts what it
// receives over UDP only.) In this process they are the
// sum over every member: go-metrics has one sink per process.
func (b *bench) gossipCounters(ctx context.Context, base string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/agent/metrics?format=prometheus", nil)
	if err != nil {
		return nil, err
	}
	resp, err := b.f.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", base, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	names := map[string]string{
		"cairn_memberlist_udp_sent": "udp", "cairn_memberlist_tcp_sent": "tcp",
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || names[name] == "" || !strings.Contains(rest, `pool="lan"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics of %s: %q: %w", base, line, err)
		}
		out[names[name]] += v
	}
	out["sent"] = out["udp"] + out["tcp"]
	return out, sc.Err()
}

// busiest is the largest CPU use of one server between two samples, in
// cores.
func busiest(from, to usage) float64 {
	top := 0.0
	for i := range from.serverCPU {
		top = max(top, cores(to.serverCPU[i]-from.serverCPU[i], to.at.Sub(from.at)))
	}
	return top
}

func cores(cpu, over time.Duration) float64 { return cpu.Seconds() / over.Seconds() }

// serverCPUs lists each server's CPU between two samples.
func serverCPUs(from, to usage) string {
	var s []string
	for i := range from.serverCPU {
		s = append(s, fmt.Sprintf("%.2f", cores(to.serverCPU[i]-from.serverCPU[i], to.at.Sub(from.at))))
	}
	return strings.Join(s, " / ")
}

// gossip measures the members' gossip traffic and the servers' idle CPU
// over one window with no catalog changes, after -quiet: the new
// members' join announcements are retransmitted for a while after the
// fleet has settled, and are not the steady state.
func (b *bench) gossip(ctx context.Context, p *point) error {
	if !clock.Sleep(ctx, b.o.quiet) {
		return ctx.Err()
	}
	from, err := b.sample(ctx)
	if err != nil {
		return err
	}
	stop, err := b.profile(len(b.f.live()), "idle")
	if err != nil {
		return err
	}
	waited := clock.Sleep(ctx, b.o.gossipWin)
	stop()
	if !waited {
		return ctx.Err()
	}
	to, err := b.sample(ctx)
	if err != nil {
		return err
	}
	secs := to.at.Sub(from.at).Seconds()
	n := float64(len(b.f.live()))
	p.gossipOut = (to.sent - from.sent) / n / secs
	for i := range from.serverSent {
		p.serverGossip = max(p.serverGossip, (to.serverSent[i]-from.serverSent[i])/secs)
	}
	p.cpuIdle = busiest(from, to)
	p.memberCPU = cores(to.selfCPU-from.selfCPU, to.at.Sub(from.at)) / n
	_, rss, _, err := loopback.Sample(os.Getpid())
	if err != nil {
		return err
	}
	p.rssPerMember = float64(rss) / 1024 / n
	p.gossipUDP = (to.udp - from.udp) / n / secs
	fmt.Printf("  gossip: members send %.0f B/s each (%.0f over UDP, %.0f over TCP); the busiest server sends %.0f B/s\n",
		p.gossipOut, p.gossipUDP, p.gossipOut-p.gossipUDP, p.serverGossip)
	fmt.Printf("  idle: servers' CPU %s cores; this process %.2f cores (%.4f per member), RSS %.0f MiB (%.1f MiB per member)\n",
		serverCPUs(from, to), cores(to.selfCPU-from.selfCPU, to.at.Sub(from.at)), p.memberCPU, float64(rss)/1024, p.rssPerMember)
	return nil
}

// profile starts this process's CPU profile, for the phase what at fleet
// size n, when -profiles is set; stop ends it.
func (b *bench) profile(n int, what string) (stop func(), err error) {
	if b.o.profiles == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(b.o.profiles, fmt.Sprintf("fleet-%d-%s.cpu.pprof", n, what)))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// feeds measures the servers' CPU with every member's change feed open,
// while a writer changes a service no member caches (cold), then one
// every member caches (hot), -rate times a second.
func (b *bench) feeds(ctx context.Context, p *point) error {
	leader := b.leader(ctx)
	if leader == nil {
		return fmt.Errorf("no leader")
	}
	for _, svc := range []string{"hot", "cold"} {
		if err := b.c.Call(ctx, leader, http.MethodPut, "/v1/catalog/register", change(svc, 0), nil); err != nil {
			return err
		}
	}
	// Asking for hot starts each member's change feed and caches hot.
	err := b.c.Poll(ctx, 250*time.Millisecond, "every member answering for hot", func(ctx context.Context) (bool, error) {
		missing := atomic.Int64{}
		err := each(b.f.live(), b.o.parallel, func(m *member) error {
			if n, ok := b.f.answers(ctx, m, "hot.service.cluster"); !ok || n == 0 {
				missing.Add(1)
			}
			return nil
		})
		return missing.Load() == 0, err
	})
	if err != nil {
		return err
	}
	for _, svc := range []string{"cold", "hot"} {
		cpu, changes, err := b.changing(ctx, leader, svc)
		if err != nil {
			return err
		}
		if svc == "cold" {
			p.cpuCold = cpu
		} else {
			p.cpuHot = cpu
		}
		fmt.Printf("  feeds, %d changes to %s: busiest server %.2f cores\n", changes, svc, cpu)
	}
	return nil
}

// change is a catalog registration of service svc's one instance on a node
// of its own, with port k: each k is a change.
func change(svc string, k int) string {
	return fmt.Sprintf(`{"Node":"ext-%s","Address":"10.99.0.1","Service":{"ID":"%s-1","Service":%q,"Port":%d}}`, svc, svc, svc, 1000+k%50000)
}

// changing changes svc -rate times a second for one window and returns
// the busiest server's CPU over it and the changes made.
func (b *bench) changing(ctx context.Context, leader *loopback.Agent, svc string) (float64, int, error) {
	from, err := b.sample(ctx)
	if err != nil {
		return 0, 0, err
	}
	tick := time.NewTicker(time.Second / time.Duration(b.o.rate))
	defer tick.Stop()
	end := time.After(b.o.window)
	k := 0
	for {
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-tick.C:
			k++
			if err := b.c.Call(ctx, leader, http.MethodPut, "/v1/catalog/register", change(svc, k), nil); err != nil {
				return 0, 0, err
			}
			continue
		case <-end:
		}
		break
	}
	to, err := b.sample(ctx)
	if err != nil {
		return 0, 0, err
	}
	return busiest(from, to), k, nil
}
