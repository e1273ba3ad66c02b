package faults

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// The name the DNS prober asks every client for: registered, and asked
// (so cached) on every client, before the fault.
const (
	stableService = "stable"
	stableNode    = "stable-node"
	stableAddr    = "192.0.2.10"
	stableName    = stableService + ".service.cluster."
	probeEvery    = 50 * time.Millisecond
	probeTimeout  = 2 * time.Second // a loaded CI machine must not make a slow answer an error
)

// dnsStats counts one client's DNS answers for stableName.
type dnsStats struct {
	client  string
	queries int
	errors  map[string]int  // kind ("timeout", "SERVFAIL", "NXDOMAIN", "no answer", "wrong answer") → count
	first   []time.Duration // when the first few errors happened
}

// dnsProber asks each client for stableName every probeEvery.
type dnsProber struct {
	h      *history
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stats  []*dnsStats
}

func startDNSProber(h *history, clients []*agent) *dnsProber {
	ctx, cancel := context.WithCancel(context.Background())
	p := &dnsProber{h: h, cancel: cancel}
	for _, c := range clients {
		st := &dnsStats{client: c.name, errors: map[string]int{}}
		p.stats = append(p.stats, st)
		p.wg.Go(func() { p.run(ctx, c.dnsAddr(), st) })
	}
	return p
}

// stop ends the probing and returns the counts.
func (p *dnsProber) stop() []*dnsStats {
	p.cancel()
	p.wg.Wait()
	return p.stats
}

func (p *dnsProber) run(ctx context.Context, addr string, st *dnsStats) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		kind, err := askStable(ctx, addr)
		if ctx.Err() != nil {
			return // a query cut short by the end is not counted
		}
		st.queries++
		if err != nil {
			st.errors[kind]++
			if len(st.first) < 5 {
				st.first = append(st.first, p.h.now())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// askStable asks addr for stableName A once; on error it returns the
// kind of error.
func askStable(ctx context.Context, addr string) (string, error) {
	m := new(dns.Msg)
	m.SetQuestion(stableName, dns.TypeA)
	c := &dns.Client{Net: "udp", Timeout: probeTimeout}
	in, _, err := c.ExchangeContext(ctx, m, addr)
	switch {
	case err != nil:
		return "timeout", err
	case in.Rcode != dns.RcodeSuccess:
		rc := dns.RcodeToString[in.Rcode]
		return rc, fmt.Errorf("rcode %s", rc)
	case len(in.Answer) == 0:
		return "no answer", fmt.Errorf("no answer")
	}
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); !ok || a.A.String() != stableAddr {
			return "wrong answer", fmt.Errorf("answer %v", rr)
		}
	}
	return "", nil
}

// leaderEvent is a server's view of the leader changing.
type leaderEvent struct {
	at     time.Duration
	server string
	leader string // RPC address; "" for none or unreachable
}

// leaderMonitor asks every server for its leader every 100ms and records
// each change of a server's answer.
type leaderMonitor struct {
	h      *history
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	events []leaderEvent
}

func startLeaderMonitor(h *history, servers []*agent) *leaderMonitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &leaderMonitor{h: h, cancel: cancel}
	client := &http.Client{Timeout: 300 * time.Millisecond}
	for _, s := range servers {
		m.wg.Go(func() {
			last := "?"
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				var l string
				status, body, err := call(ctx, client, http.MethodGet, s.httpURL()+"/v1/status/leader", "")
				if ctx.Err() != nil {
					return
				}
				if err != nil || status != http.StatusOK || json.Unmarshal(body, &l) != nil {
					l = ""
				}
				if l != last {
					m.mu.Lock()
					m.events = append(m.events, leaderEvent{at: h.now(), server: s.name, leader: l})
					m.mu.Unlock()
					last = l
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	return m
}

// stop ends the monitoring and returns the events in time order.
func (m *leaderMonitor) stop() []leaderEvent {
	m.cancel()
	m.wg.Wait()
	slices.SortStableFunc(m.events, func(a, b leaderEvent) int { return cmp.Compare(a.at, b.at) })
	return m.events
}

// newLeaderAt returns when, after from, a server first named a leader
// other than old; false if none did.
func newLeaderAt(events []leaderEvent, old string, from time.Duration) (time.Duration, string, bool) {
	for _, e := range events {
		if e.at >= from && e.leader != "" && e.leader != old {
			return e.at, e.leader, true
		}
	}
	return 0, "", false
}
