package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// monitoringDir holds the Prometheus configuration and Grafana dashboard
// the tests check.
var monitoringDir = filepath.Join("..", "examples", "monitoring")

// TestMonitoringPrometheusConfig checks examples/monitoring/prometheus.yml
// with promtool, as Prometheus would load it. promtool reads a copy, so
// that nothing it might write lands in the repository.
func TestMonitoringPrometheusConfig(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool", "prometheus")
	b, err := os.ReadFile(filepath.Join(monitoringDir, "prometheus.yml"))
	if err != nil {
		t.Fatalf("read the example: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "check", "config", cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config examples/monitoring/prometheus.yml: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool check config: got %q, want SUCCESS", out)
	}
}

// scrapeInterval is how often the test's Prometheus scrapes the agents,
// and so how often a check of its data can find something new.
const scrapeInterval = time.Second

// monitoringTimeout bounds the wait, from Prometheus' start, for every
// check to pass.
const monitoringTimeout = 45 * time.Second

// TestMonitoringDashboard is issue 17's "Done when": a cluster of three
// servers and two clients, run as processes, scraped by Debian's
// Prometheus with the example's job (only the targets and the interval
// changed) shows Raft, RPC, gossip, HTTP, DNS, cache and process series
// from the agents that have them, and every query of the example Grafana
// dashboard returns data from that Prometheus.
func TestMonitoringDashboard(t *testing.T) {
	t.Parallel()
	prometheus := requireTool(t, "prometheus", "prometheus")
	queries := dashboardQueries(t)
	servers, clients := startMonitoredCluster(t)
	all := append(slices.Clone(servers), clients...)
	mustCLI(t, clients[0].httpAddr(), "services", "register", "-name", "web", "-port", "8080")
	startTraffic(t, all)

	cfg := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(monitoringConfig(t, servers, clients)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	port := startResolver(t, func(port int) []string {
		return []string{prometheus, "--config.file=" + cfg, "--storage.tsdb.path=" + t.TempDir(),
			"--web.listen-address=127.0.0.1:" + strconv.Itoa(port), "--log.level=warn"}
	})
	prom := promAPI{base: "http://127.0.0.1:" + strconv.Itoa(port), client: &http.Client{Timeout: 5 * time.Second}}

	serverSet, allSet := instances(servers), instances(all)
	var checks []promCheck
	for _, c := range []struct{ family, expr, want string }{
		{"scrape", "up == 1", allSet},
		{"Raft", `count by (instance) ({__name__=~"cairn_raft_.+"})`, serverSet},
		{"RPC", "cairn_rpc_requests_total", serverSet},
		{"gossip", "cairn_gossip_members", allSet},
		{"gossip", `count by (instance) ({__name__=~"cairn_memberlist_.+"})`, allSet},
		{"HTTP", "cairn_http_requests_total", allSet},
		{"DNS", "cairn_dns_questions_total", allSet},
		{"cache", "cairn_cache_hits_total > 0", allSet},
		{"process", "process_resident_memory_bytes", allSet},
	} {
		checks = append(checks, promCheck{c.family + ": " + c.expr, c.expr, wantInstances(c.want)})
	}
	checks = append(checks, promCheck{"Raft: one leader", "sum(cairn_server_is_leader)", wantValue(1)})
	for _, q := range queries {
		checks = append(checks, promCheck{"dashboard panel " + strconv.Quote(q.panel) + ": " + q.expr, q.expr, wantNumber})
	}

	// Every check is run on each round, and the test passes on the first
	// round where all pass: a series that appeared once and went away
	// (a library summary's quantiles turn NaN ten seconds after their
	// last observation) does not count.
	deadline := time.NewTimer(monitoringTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(scrapeInterval)
	defer tick.Stop()
	for {
		var failed []string
		for _, c := range checks {
			if err := c.run(prom); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", c.name, err))
			}
		}
		if len(failed) == 0 {
			t.Logf("all %d checks (%d dashboard queries) pass %s after Prometheus' start",
				len(checks), len(queries), time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("after %v, %d of %d checks fail:\n%s", monitoringTimeout, len(failed), len(checks), strings.Join(failed, "\n"))
		case <-tick.C:
		}
	}
}

// dashboardQuery is one PromQL expression of the example dashboard, with
// Grafana's variables replaced.
type dashboardQuery struct{ panel, expr string }

// grafanaVar matches Grafana's built-in interval variables ($__rate_interval,
// ${__interval}, $__range, ...).
var grafanaVar = regexp.MustCompile(`\$\{?__[a-z_]+\}?`)

// dashboardQueries returns every expression of the example dashboard's
// panels, rows' collapsed panels included, with Grafana's interval
// variables replaced by 1m: a window that holds many samples at the test's
// scrape interval, as $__rate_interval does at a real one.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(monitoringDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatalf("read the dashboard: %v", err)
	}
	type panel struct {
		Title   string
		Type    string
		Targets []struct{ Expr string }
		Panels  []json.RawMessage // a collapsed row's panels
	}
	var dash struct {
		Panels []json.RawMessage
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("examples/monitoring/grafana-dashboard.json: %v", err)
	}
	var queries []dashboardQuery
	var walk func([]json.RawMessage)
	walk = func(raws []json.RawMessage) {
		for _, raw := range raws {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("examples/monitoring/grafana-dashboard.json: a panel: %v", err)
			}
			walk(p.Panels)
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("dashboard panel %q has no query", p.Title)
			}
			for _, target := range p.Targets {
				expr := grafanaVar.ReplaceAllString(target.Expr, "1m")
				if strings.Contains(expr, "$") {
					t.Errorf("dashboard panel %q: the test cannot substitute a variable of %q", p.Title, target.Expr)
				}
				queries = append(queries, dashboardQuery{p.Title, expr})
			}
		}
	}
	walk(dash.Panels)
	if len(queries) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return queries
}

// startMonitoredCluster starts three servers (-bootstrap-expect 3) and two
// clients on 127.0.0.1, each joining the servers' gossip ports, all at once
// since no server is ready before the three have elected a leader.
func startMonitoredCluster(t *testing.T) (servers, clients []*agentProc) {
	t.Helper()
	names := []string{"s1", "s2", "s3", "c1", "c2"}
	lan := map[string]string{}
	for _, name := range names {
		lan[name] = strconv.Itoa(freePort(t))
	}
	args := map[string][]string{}
	for _, name := range names {
		a := []string{"-node", name, "-data-dir", t.TempDir(), "-serf-lan-port", lan[name], "-retry-interval", "1s"}
		if strings.HasPrefix(name, "s") {
			a = append(a, "-server", "-bootstrap-expect", "3")
		}
		for _, s := range names[:3] {
			if s != name {
				a = append(a, "-retry-join", "127.0.0.1:"+lan[s])
			}
		}
		args[name] = a
	}
	agents := launchTogether(t, args)
	for _, name := range names[:3] {
		servers = append(servers, agents[name])
	}
	return servers, append(clients, agents["c1"], agents["c2"])
}

// startTraffic asks every agent's DNS for web.service.cluster and writes a
// key through every agent's HTTP API, each a few times a second until the
// test ends, so that the DNS, cache, HTTP, RPC and Raft series the
// dashboard shows as rates and quantiles have recent observations: a rate
// over an idle minute is 0 and a latency quantile NaN. Failures are not
// reported here; the checks judge what the agents counted.
func startTraffic(t *testing.T, agents []*agentProc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	client := &http.Client{Timeout: 2 * time.Second}
	resolver := &dns.Client{Timeout: 2 * time.Second}
	for i, a := range agents {
		wg.Go(func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			q := new(dns.Msg).SetQuestion("web.service.cluster.", dns.TypeA)
			dnsAddr := "127.0.0.1:" + strconv.Itoa(a.dnsPort)
			kv := "http://" + a.httpAddr() + "/v1/kv/monitoring/" + strconv.Itoa(i)
			for n := 0; ; n++ {
				_, _, _ = resolver.ExchangeContext(ctx, q, dnsAddr)
				req, err := http.NewRequestWithContext(ctx, http.MethodPut, kv, strings.NewReader(strconv.Itoa(n)))
				if err == nil {
					if resp, err := client.Do(req); err == nil {
						resp.Body.Close()
					}
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
}

// monitoringConfig returns examples/monitoring/prometheus.yml with its
// targets replaced by the test's agents and every 15s interval by
// scrapeInterval: the example's job, metrics path and parameters as shipped.
func monitoringConfig(t *testing.T, servers, clients []*agentProc) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(monitoringDir, "prometheus.yml"))
	if err != nil {
		t.Fatalf("read the example: %v", err)
	}
	text := string(b)
	for _, r := range []struct {
		old    string
		agents []*agentProc
	}{
		{`["127.0.0.21:8500", "127.0.0.22:8500", "127.0.0.23:8500"]`, servers},
		{`["127.0.0.24:8500", "127.0.0.25:8500"]`, clients},
	} {
		if n := strings.Count(text, r.old); n != 1 {
			t.Fatalf("examples/monitoring/prometheus.yml: got %d occurrences of %s, want 1", n, r.old)
		}
		var targets []string
		for _, a := range r.agents {
			targets = append(targets, strconv.Quote(a.httpAddr()))
		}
		text = strings.Replace(text, r.old, "["+strings.Join(targets, ", ")+"]", 1)
	}
	if !strings.Contains(text, "scrape_interval: 15s") {
		t.Fatal("examples/monitoring/prometheus.yml: no scrape_interval: 15s")
	}
	return strings.ReplaceAll(text, ": 15s", ": "+scrapeInterval.String())
}

// instances is the comma-separated, sorted list of the agents' HTTP
// addresses: the instance label Prometheus gives their series.
func instances(agents []*agentProc) string {
	var s []string
	for _, a := range agents {
		s = append(s, a.httpAddr())
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct {
	base   string
	client *http.Client
}

// promSample is one element of an instant vector.
type promSample struct {
	Metric map[string]string
	Value  float64
}

// query evaluates expr now and returns the resulting vector.
func (p promAPI) query(expr string) ([]promSample, error) {
	resp, err := p.client.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]json.RawMessage // [time, "value"]
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("status %d, undecodable answer: %w", resp.StatusCode, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return nil, fmt.Errorf("got a %s, want a vector", body.Data.ResultType)
	}
	samples := make([]promSample, 0, len(body.Data.Result))
	for _, r := range body.Data.Result {
		var s string
		if err := json.Unmarshal(r.Value[1], &s); err != nil {
			return nil, fmt.Errorf("value %s: %w", r.Value[1], err)
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		samples = append(samples, promSample{r.Metric, v})
	}
	return samples, nil
}

// promCheck is a query and what its result must be.
type promCheck struct {
	name, expr string
	want       func([]promSample) error
}

func (c promCheck) run(p promAPI) error {
	samples, err := p.query(c.expr)
	if err != nil {
		return err
	}
	return c.want(samples)
}

// wantInstances requires series from exactly the instances in want, a
// list as instances returns it.
func wantInstances(want string) func([]promSample) error {
	return func(samples []promSample) error {
		var got []string
		for _, s := range samples {
			if !slices.Contains(got, s.Metric["instance"]) {
				got = append(got, s.Metric["instance"])
			}
		}
		slices.Sort(got)
		if g := strings.Join(got, ","); g != want {
			return fmt.Errorf("got series from instances [%s], want [%s]", g, want)
		}
		return nil
	}
}

// wantValue requires one sample of value v.
func wantValue(v float64) func([]promSample) error {
	return func(samples []promSample) error {
		if len(samples) != 1 || samples[0].Value != v {
			return fmt.Errorf("got %v, want one sample of %v", samples, v)
		}
		return nil
	}
}

// wantNumber requires at least one sample that is a number: a quantile of
// no observations or a ratio of zero rates is NaN, which a panel draws as
// nothing.
func wantNumber(samples []promSample) error {
	if len(samples) == 0 {
		return errors.New("no data")
	}
	for _, s := range samples {
		if !math.IsNaN(s.Value) {
			return nil
		}
	}
	return fmt.Errorf("only NaN in %d series", len(samples))
}
