package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/miekg/dns"
)

// past is the latency a storm's registration must stay under: the
// figure the storm reports is how many did not, and the slowest.
const past = 30 * time.Second

// stormName is the j-th service every agent registers in the storm: each
// name ends up with one instance on every agent, so that one DNS answer
// tells whether an agent sees every agent's registration of it.
func stormName(j int) string { return fmt.Sprintf("storm-%d", j) }

// storm has every agent (the servers and the running members) register
// -storm-each services through its own HTTP API, all due at once (or
// spread evenly over -storm-over), at most -storm-conns at a time per
// agent, and measures each registration's latency from the moment it was
// due, how long until the leader's catalog holds them all, and how long
// until every agent's DNS answers every name with every agent's instance.
// Every agent has asked its DNS for every name once before (no
// instance yet), so the last figure includes its caches catching up.
// The services are deregistered afterwards.
func (b *bench) storm(ctx context.Context, p *point) error {
	var agents []target
	for _, s := range b.servers {
		agents = append(agents, target{s.Name, s.IP})
	}
	for _, m := range b.f.live() {
		agents = append(agents, m.target())
	}
	perAgent, over, conns := b.o.stormEach, b.o.stormOver, b.o.stormConns
	total := perAgent * len(agents)
	if err := b.dnsCurrent(ctx, agents, perAgent, 0); err != nil {
		return fmt.Errorf("storm names before the storm: %w", err)
	}
	hc := &http.Client{Timeout: b.o.timeout, Transport: &http.Transport{
		MaxIdleConns: len(agents) * conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute,
	}}
	defer hc.CloseIdleConnections()
	from, err := b.sample(ctx)
	if err != nil {
		return err
	}
	stop, err := b.profile(len(agents)-len(b.servers), "storm")
	if err != nil {
		return err
	}
	defer stop()
	begin := from.at
	lat := make([]time.Duration, total)
	var (
		failed, stored atomic.Int64
		first          atomic.Value
		wg             sync.WaitGroup
	)
	for a, t := range agents {
		var next atomic.Int64
		for range min(conns, perAgent) {
			wg.Go(func() {
				for j := int(next.Add(1)) - 1; j < perAgent && ctx.Err() == nil; j = int(next.Add(1)) - 1 {
					k := j*len(agents) + a // agents take turns, so a spread storm loads them evenly
					due := begin.Add(over * time.Duration(k) / time.Duration(total))
					if !clock.Sleep(ctx, time.Until(due)) {
						return
					}
					body := fmt.Sprintf(`{"ID":%q,"Name":%q,"Port":%d}`, stormName(j), stormName(j), 1+k%60000)
					status, err := b.f.call(ctx, hc, t, http.MethodPut, "/v1/agent/service/register", body)
					lat[k] = time.Since(due)
					switch {
					case status == http.StatusServiceUnavailable:
						// Stored on the agent, not yet in the catalog: the
						// agent keeps pushing it; the waits below see it land.
						stored.Add(1)
					case err != nil:
						failed.Add(1)
						first.CompareAndSwap(nil, err)
					}
				}
			})
		}
	}
	wg.Wait()
	acked := time.Since(begin)
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("storm: %d of %d registrations failed, the first: %v", n, total, first.Load())
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The catalog and the agents' DNS are watched at once, each timed
	// from the storm's start.
	var catalog, everywhere time.Duration
	var catalogErr error
	var watch sync.WaitGroup
	watch.Go(func() {
		catalogErr = b.c.Poll(ctx, 100*time.Millisecond, fmt.Sprintf("%d storm instances in the catalog", total), func(ctx context.Context) (bool, error) {
			n, err := b.stormCount(ctx, perAgent)
			catalog = time.Since(begin)
			return n == total, err
		})
	})
	dnsErr := b.dnsCurrent(ctx, agents, perAgent, len(agents))
	everywhere = time.Since(begin)
	watch.Wait()
	if err := errors.Join(catalogErr, dnsErr); err != nil {
		return err
	}
	to, err := b.sample(ctx)
	if err != nil {
		return err
	}
	slices.Sort(lat)
	over30 := len(lat) - sort.Search(len(lat), func(i int) bool { return lat[i] > past })
	p.stormAck99, p.stormMax, p.stormPast = msDur(loopback.Ms(lat, 0.99)), lat[len(lat)-1], over30
	p.stormCatalog, p.stormDNS = catalog, everywhere
	shape := "all at once"
	if over > 0 {
		shape = "offered evenly over " + over.String()
	}
	fmt.Printf("  storm: %d agents × %d registrations = %d, %s, up to %d at a time per agent: all answered after %s "+
		"(latency p50 %.0fms p99 %.0fms max %.0fms; %d past %s; %d stored on the agent but not yet in the catalog); "+
		"all in the catalog after %s; every agent's DNS answering every name with all %d instances after %s; servers' CPU %s cores, "+
		"this process's (the members and the load) %.2f cores\n",
		len(agents), perAgent, total, shape, min(conns, perAgent), acked.Round(time.Millisecond),
		loopback.Ms(lat, 0.5), loopback.Ms(lat, 0.99), loopback.Ms(lat, 1), over30, past, stored.Load(),
		catalog.Round(time.Millisecond), len(agents), everywhere.Round(time.Millisecond), serverCPUs(from, to),
		cores(to.selfCPU-from.selfCPU, to.at.Sub(from.at)))
	// Deregistered, so that the next size starts from the same catalog. A
	// 503 is taken as success, as for the registrations: the agent keeps
	// pushing the removal, and the wait below sees it land.
	err = each(agents, 64, func(t target) error {
		for j := range perAgent {
			status, err := b.f.call(ctx, hc, t, http.MethodPut, "/v1/agent/service/deregister/"+stormName(j), "")
			if err != nil && status != http.StatusServiceUnavailable {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return b.c.Poll(ctx, 250*time.Millisecond, "no storm instance left in the catalog", func(ctx context.Context) (bool, error) {
		n, err := b.stormCount(ctx, perAgent)
		return n == 0, err
	})
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// stormCount is how many instances of the storm's names the leader's
// catalog holds (-1 when there is no leader).
func (b *bench) stormCount(ctx context.Context, names int) (int, error) {
	leader := b.leader(ctx)
	if leader == nil {
		return -1, nil
	}
	n := 0
	for j := range names {
		var instances []json.RawMessage
		if err := b.c.Call(ctx, leader, http.MethodGet, "/v1/catalog/service/"+stormName(j), "", &instances); err != nil {
			return -1, err
		}
		n += len(instances)
	}
	return n, nil
}

// dnsCurrent asks every agent's DNS, over TCP, for the SRV records of
// each storm name until it answers with want of them, and returns once
// every agent does for every name. Each round asks each agent only the
// names it has not yet answered fully, on one connection per agent.
func (b *bench) dnsCurrent(ctx context.Context, agents []target, names, want int) error {
	pending := make([][]int, len(agents))
	for a := range agents {
		for j := range names {
			pending[a] = append(pending[a], j)
		}
	}
	client := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	what := fmt.Sprintf("every agent's DNS answering %d storm names with %d instances", names, want)
	return b.c.Poll(ctx, 100*time.Millisecond, what, func(ctx context.Context) (bool, error) {
		var left atomic.Int64
		var mu sync.Mutex
		var last error
		_ = each(indexes(len(agents)), b.o.parallel, func(a int) error {
			still, err := srvCounts(ctx, client, agents[a].ip+":8600", pending[a], want)
			pending[a] = still
			left.Add(int64(len(still)))
			if err != nil {
				mu.Lock()
				last = fmt.Errorf("%s: %w", agents[a].name, err)
				mu.Unlock()
			}
			return nil
		})
		return left.Load() == 0, last
	})
}

// srvCounts asks addr for each name of names on one TCP connection and
// returns those not answered with exactly want SRV records.
func srvCounts(ctx context.Context, client *dns.Client, addr string, names []int, want int) ([]int, error) {
	if len(names) == 0 {
		return nil, nil
	}
	conn, err := client.DialContext(ctx, addr)
	if err != nil {
		return names, err
	}
	defer conn.Close()
	var still []int
	for i, j := range names {
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(stormName(j)+".service.cluster"), dns.TypeSRV)
		r, _, err := client.ExchangeWithConnContext(ctx, q, conn)
		if err != nil {
			return append(still, names[i:]...), err
		}
		n := 0
		for _, rr := range r.Answer {
			if _, ok := rr.(*dns.SRV); ok {
				n++
			}
		}
		if n != want {
			still = append(still, j)
		}
	}
	return still, nil
}

// indexes is 0, 1, …, n-1.
func indexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
