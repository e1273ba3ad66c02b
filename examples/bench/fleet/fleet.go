package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/config"
	"github.com/miekg/dns"
)

// member is one client agent of the fleet, running in this process.
type member struct {
	i    int
	name string // f0001…
	ip   string
	cfg  config.Config
	a    *agent.Agent // nil while stopped
}

// service is the name of the one service member m registers, its own: a
// DNS question for it asks about m alone.
func (m *member) service() string { return "own-" + m.name }

// target is an agent the bench sends HTTP and DNS requests to: a member,
// or one of the servers.
type target struct{ name, ip string }

func (m *member) target() target { return target{m.name, m.ip} }

// fleet is the client agents, each on its own loopback address with the
// default ports, all in this process: they share the binary's memory and
// go-metrics' process-wide sink, which is how gossip bytes are counted.
type fleet struct {
	members []*member
	servers []string // the servers' gossip addresses, joined by every member
	o       options
	work    string
	logs    *slog.Logger
	http    *http.Client
	dns     *dns.Client
}

func newFleet(work string, servers []string, o options) (*fleet, error) {
	logFile, err := os.Create(filepath.Join(work, "fleet.log"))
	if err != nil {
		return nil, err
	}
	return &fleet{
		servers: servers, work: work, o: o,
		logs: slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelWarn})),
		// Idle connections are dropped before the agents' HTTP servers
		// drop them (after 2 minutes): a PUT sent on a connection the
		// server closes at that moment fails with EOF, and is not retried.
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConns: 4096, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute,
		}},
		dns: &dns.Client{Timeout: time.Second},
	}, nil
}

// memberIP is the i-th member's address: 127.N.x.y with y in 10–209, so
// that no member shares an address with the servers (127.0.0.x).
func memberIP(net string, i int) string {
	return fmt.Sprintf("%s.%d.%d", net, i/200, 10+i%200)
}

// grow starts members until there are n, `parallel` at a time; each joins
// every server, as retry_join in a real deployment would have it.
func (f *fleet) grow(ctx context.Context, net string, n, parallel int) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallel)
	)
	for i := len(f.members); i < n; i++ {
		m := &member{i: i, name: fmt.Sprintf("f%04d", i), ip: memberIP(net, i)}
		m.cfg = f.config(m)
		f.members = append(f.members, m)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f.start(ctx, m); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// config is member m's agent configuration: the defaults but for its
// addresses and data directory, the gossip_lan flags, one UDP DNS socket (a thousand agents on
// two cores gain nothing from one per core), no HTTPS or DNS over TLS, and
// no leave on an ordinary stop, so that kill (a stop without leaving) looks
// to the others like a crash.
func (f *fleet) config(m *member) config.Config {
	cfg := config.Default()
	cfg.NodeName = m.name
	cfg.BindAddr, cfg.ClientAddr = m.ip, m.ip
	cfg.DataDir = filepath.Join(f.work, "fleet", m.name)
	cfg.Ports.HTTPS, cfg.Ports.DNSTLS = -1, -1
	cfg.Resolver.UDPSockets = 1
	cfg.Join = f.servers
	cfg.RetryInterval = time.Second
	cfg.LogLevel = "warn"
	cfg.Telemetry.PrometheusRetentionTime = 24 * time.Hour // as the servers' (run)
	cfg.GossipLAN.ProbeInterval, cfg.GossipLAN.ProbeTimeout = f.o.probeInterval, f.o.probeTimeout
	cfg.GossipLAN.SuspicionMult = f.o.suspicionMult
	no := false
	cfg.LeaveOnTerminate = &no
	return cfg
}

func (f *fleet) start(ctx context.Context, m *member) error {
	a, err := agent.New(m.cfg, f.logs)
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := a.Start(sctx); err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	m.a = a
	return nil
}

// kill stops m without leaving the cluster: its sockets close as a killed
// process's would, and the others learn of it only by gossip's probes.
func (f *fleet) kill(m *member) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := m.a.Stop(ctx, agent.ErrTerminated)
	m.a = nil
	if err != nil {
		return fmt.Errorf("stop %s: %w", m.name, err)
	}
	return nil
}

// shutdown stops every running member, leaving gracefully, 64 at a time.
func (f *fleet) shutdown() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, m := range f.members {
		if m.a == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := m.a.Shutdown(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "shut down %s: %v\n", m.name, err)
			}
		})
	}
	wg.Wait()
}

// live returns the running members.
func (f *fleet) live() []*member {
	var l []*member
	for _, m := range f.members {
		if m.a != nil {
			l = append(l, m)
		}
	}
	return l
}

// each calls fn for every element of xs, `parallel` at a time, and
// returns the errors joined.
func each[T any](xs []T, parallel int, fn func(T) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallel)
	)
	for _, x := range xs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(x); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// call sends method path with body to t's HTTP API through hc and wants a
// 200; it returns the status too (0 when there was no answer).
func (f *fleet) call(ctx context.Context, hc *http.Client, t target, method, path, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+t.ip+":8500"+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	// Every request sent here is idempotent (a registration names its
	// ID), and saying so lets net/http send it again when the server
	// closed the idle connection it went out on. An agent closes a
	// connection that carried no request for its ReadHeaderTimeout
	// (10s), and net/http keeps the spare connections it dials when
	// requests race; in a starved process it may not have seen the close
	// yet when it picks one.
	req.Header.Set("Idempotency-Key", method+" "+path+" "+body)
	// Which connection a failed request went out on tells a server that
	// closed it (reused, idle a while) from one that never answered.
	var conn httptrace.GotConnInfo
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i }}))
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s on %s (after %s on a connection %s): %w", method, path, t.name,
			time.Since(start).Round(time.Millisecond), describeConn(conn), err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("%s %s on %s: status %d: %s", method, path, t.name, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return resp.StatusCode, nil
}

// describeConn says whether a request's connection was new or reused,
// and how long it had been idle.
func describeConn(c httptrace.GotConnInfo) string {
	switch {
	case c.Conn == nil:
		return "not yet had"
	case !c.Reused:
		return "new, from " + c.Conn.LocalAddr().String()
	case c.WasIdle:
		return fmt.Sprintf("from %s, reused, idle %s", c.Conn.LocalAddr(), c.IdleTime.Round(time.Millisecond))
	default:
		return "from " + c.Conn.LocalAddr().String() + ", reused"
	}
}

// answers asks m's DNS for name's A records and returns how many the
// answer holds; ok is false when there was no usable answer.
func (f *fleet) answers(ctx context.Context, m *member, name string) (n int, ok bool) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := f.dns.ExchangeContext(ctx, q, m.ip+":8600")
	if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError) {
		return 0, false
	}
	for _, rr := range r.Answer {
		if _, isA := rr.(*dns.A); isA {
			n++
		}
	}
	return n, true
}
