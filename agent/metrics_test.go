package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
)

// TestMetrics has a dev agent answer a few DNS questions, then reads
// GET /v1/agent/metrics in both forms and expects them counted: by qtype
// and rcode, in the latency histogram, in the cache, and the agent's
// services and checks beside them.
func TestMetrics(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	ctx := context.Background()
	c := client(t, a)
	if err := c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "web", Port: 8080}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a miss, then a hit
		if r := query(t, a, "udp", "web.service.cluster", dns.TypeSRV); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("SRV: got %s %v, want NOERROR and one answer", dns.RcodeToString[r.Rcode], r.Answer)
		}
	}
	if r := query(t, a, "tcp", "nope.service.cluster", dns.TypeA); r.Rcode != dns.RcodeNameError {
		t.Fatalf("A nope: got %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
	// Checks registered after the questions: they are the node's, and a
	// critical one would have made web unhealthy.
	for id, status := range map[string]string{"ttl-ok": "passing", "ttl-meh": "warning"} {
		reg := &api.AgentCheckRegistration{ID: id, Name: id, AgentServiceCheck: api.AgentServiceCheck{TTL: "1h", Status: status}}
		if err := c.Agent().CheckRegister(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}

	// A question is counted once its reply has been written, which can be
	// a moment after the client has it: read until all three are in.
	var body, ctype string
	var samples map[string]float64
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		body, ctype = get(t, a, "/v1/agent/metrics?format=prometheus")
		samples, err = parsePrometheus(body)
		if err != nil {
			t.Fatalf("the text is not Prometheus's format: %v\n%s", err, body)
		}
		if samples["cairn_dns_answer_seconds_count"] >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ctype != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("got Content-Type %q, want text/plain; version=0.0.4; charset=utf-8", ctype)
	}
	for series, want := range map[string]float64{
		`cairn_dns_questions_total{qtype="SRV",rcode="NOERROR"}`: 2,
		`cairn_dns_questions_total{qtype="A",rcode="NXDOMAIN"}`:  1,
		`cairn_dns_answer_seconds_count`:                         3,
		`cairn_dns_answer_seconds_bucket{le="+Inf"}`:             3,
		`cairn_cache_hits_total`:                                 1,
		`cairn_cache_misses_total`:                               2, // web, and nope (a negative entry)
		`cairn_cache_stale_answers_total`:                        0,
		`cairn_cache_evictions_total`:                            0,
		`cairn_cache_refresh_errors_total`:                       0,
		`cairn_cache_entries`:                                    2,
		`cairn_agent_services`:                                   1, // web (the servers' cairn service is the leader's)
		`cairn_agent_checks{status="passing"}`:                   1,
		`cairn_agent_checks{status="warning"}`:                   1,
		`cairn_agent_checks{status="critical"}`:                  0,
		`cairn_agent_checks{status="maintenance"}`:               0,
	} {
		got, ok := samples[series]
		if !ok {
			t.Errorf("%s: missing", series)
		} else if got != want {
			t.Errorf("%s: got %v, want %v", series, got, want)
		}
	}
	var questions float64
	for series, v := range samples {
		if strings.HasPrefix(series, "cairn_dns_questions_total{") {
			questions += v
		}
	}
	if questions != 3 {
		t.Errorf("questions in all: got %v, want 3\n%s", questions, body)
	}
	if s := samples["cairn_dns_answer_seconds_sum"]; s <= 0 || s > 10 {
		t.Errorf("cairn_dns_answer_seconds_sum: got %v, want a few milliseconds", s)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if samples[name] <= 0 {
			t.Errorf("%s: got %v, want more than 0", name, samples[name])
		}
	}
	// What raft emits through go-metrics reaches the same registry: the
	// registration above went through this server's Raft log.
	raftSeries := 0
	for series := range samples {
		if strings.HasPrefix(series, "cairn_raft_") {
			raftSeries++
		}
	}
	// The HTTP API's requests, by route: the registration above.
	if n := samples[`cairn_http_requests_total{code="200",method="PUT",route="/v1/agent/service/register"}`]; n != 1 {
		t.Errorf("registrations counted by the HTTP API: got %v, want 1", n)
	}
	if n := samples[`cairn_http_request_duration_seconds_count{method="PUT",route="/v1/agent/service/register"}`]; n != 1 {
		t.Errorf("registrations timed by the HTTP API: got %v, want 1", n)
	}
	// The RPC calls the server ran: the agent's own sync reads its node.
	if n := samples[`cairn_rpc_requests_total{method="Catalog.NodeServices",result="ok"}`]; n < 1 {
		t.Errorf("Catalog.NodeServices calls counted by the RPC server: got %v, want at least 1", n)
	}
	if n := samples[`cairn_catalog_entries{kind="service_instances"}`]; n != 2 {
		t.Errorf("service instances in the server's catalog: got %v, want 2 (web and the server's cairn)", n)
	}
	if n := samples[`cairn_gossip_members{pool="lan",status="alive"}`]; n != 1 {
		t.Errorf("alive LAN members: got %v, want 1", n)
	}
	if samples["cairn_server_is_leader"] != 1 || samples["cairn_server_leader_known"] != 1 || samples["cairn_server_applied_index"] < 1 {
		t.Errorf("the dev server's Raft: got is_leader %v, leader_known %v, applied_index %v; want 1, 1 and an index",
			samples["cairn_server_is_leader"], samples["cairn_server_leader_known"], samples["cairn_server_applied_index"])
	}
	if v, ok := samples["cairn_raft_storage_healthy"]; !ok || v != 1 {
		t.Errorf("cairn_raft_storage_healthy: got %v (reported %v), want 1", v, ok)
	}
	if v, ok := samples["cairn_raft_storage_write_failures_total"]; !ok || v != 0 {
		t.Errorf("cairn_raft_storage_write_failures_total: got %v (reported %v), want 0", v, ok)
	}
	if samples[`cairn_agent_syncs_total{result="ok"}`] < 1 {
		t.Errorf("anti-entropy syncs: got %v ok, want at least the first", samples[`cairn_agent_syncs_total{result="ok"}`])
	}
	if raftSeries == 0 {
		t.Errorf("no cairn_raft_ series in:\n%s", body)
	}

	raw, ctype := get(t, a, "/v1/agent/metrics")
	if ctype != "application/json" {
		t.Errorf("JSON: got Content-Type %q, want application/json", ctype)
	}
	var sum struct {
		Timestamp string
		Gauges    []struct {
			Name   string
			Value  float64
			Labels map[string]string
		}
		Counters, Samples []struct {
			Name   string
			Count  uint64
			Sum    float64
			Labels map[string]string
		}
	}
	if err := json.Unmarshal([]byte(raw), &sum); err != nil {
		t.Fatalf("JSON: %v\n%s", err, raw)
	}
	if sum.Timestamp == "" {
		t.Errorf("JSON: no Timestamp")
	}
	found := map[string]bool{}
	for _, cv := range sum.Counters {
		if cv.Name == "cairn_dns_questions_total" && cv.Labels["qtype"] == "SRV" && cv.Labels["rcode"] == "NOERROR" {
			found["questions"] = cv.Count == 2
		}
		if cv.Name == "cairn_cache_hits_total" {
			found["hits"] = cv.Count == 1 && cv.Labels != nil
		}
	}
	for _, g := range sum.Gauges {
		if g.Name == "cairn_agent_checks" && g.Labels["status"] == "passing" {
			found["checks"] = g.Value == 1
		}
	}
	for _, sv := range sum.Samples {
		if sv.Name == "cairn_dns_answer_seconds" {
			found["latency"] = sv.Count == 3 && sv.Sum > 0
		}
	}
	for _, k := range []string{"questions", "hits", "checks", "latency"} {
		if !found[k] {
			t.Errorf("JSON: %s missing or wrong\n%s", k, raw)
		}
	}
}

// get GETs path from a's HTTP API and returns the body and Content-Type,
// failing the test unless the status is 200.
// An agent with a data dir reports the room left in it.
func TestMetricsReportDataDirFreeSpace(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.ServerConfig(t, "s1", 1))
	samples, err := parsePrometheus(func() string { b, _ := get(t, a, "/v1/agent/metrics?format=prometheus"); return b }())
	if err != nil {
		t.Fatal(err)
	}
	if v := samples["cairn_data_dir_free_bytes"]; v <= 0 {
		t.Errorf("cairn_data_dir_free_bytes: got %v, want the data dir's free space", v)
	}
	if v, ok := samples["cairn_raft_storage_healthy"]; !ok || v != 1 {
		t.Errorf("cairn_raft_storage_healthy of a server on disk: got %v (reported %v), want 1", v, ok)
	}
}

func get(t *testing.T, a *agent.Agent, path string) (body, contentType string) {
	t.Helper()
	resp, err := http.Get("http://" + a.HTTPAddr().String() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: got status %d, want 200; body %s", path, resp.StatusCode, b)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// parsePrometheus parses text with Prometheus' own parser and returns its
// samples by series: `name{a="x",b="y"}` (labels sorted by name) for
// counters and gauges, and for a histogram `name_count`, `name_sum` and
// `name_bucket{le="…"}` (the last `le="+Inf"`, equal to the count).
func parsePrometheus(text string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64)
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := func(suffix string, extra ...string) string {
				all := append(slices.Clone(labels), extra...)
				if len(all) == 0 {
					return name + suffix
				}
				return name + suffix + "{" + strings.Join(all, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[series("")] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[series("")] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[series("")] = m.GetUntyped().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				out[series("_count")] = float64(h.GetSampleCount())
				out[series("_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[series("_bucket", fmt.Sprintf("le=%q", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)))] = float64(b.GetCumulativeCount())
				}
				out[series("_bucket", `le="+Inf"`)] = float64(h.GetSampleCount())
			case m.Summary != nil:
				out[series("_count")] = float64(m.GetSummary().GetSampleCount())
				out[series("_sum")] = m.GetSummary().GetSampleSum()
			}
		}
	}
	return out, nil
}
