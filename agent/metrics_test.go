package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

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
		`cairn_agent_services`:                                   2, // web, and the server's own cairn
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
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes"} {
		if samples[name] <= 0 {
			t.Errorf("%s: got %v, want more than 0", name, samples[name])
		}
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

// The pieces of the text format's lines.
var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)`)
	metaLine   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)
)

// parsePrometheus checks text against the Prometheus text format 0.0.4,
// as cairn writes it (no timestamps, no untyped metrics), and returns its
// samples by series (name and labels as written). It checks that every
// family has one HELP and one TYPE line before its samples and its lines
// together; that each sample is `name{labels} value` of its family (for a
// histogram _bucket, _sum and _count) and appears once; that counters
// are named _total and not negative; and that a histogram's buckets are
// cumulative, by increasing le, and end with le="+Inf" equal to _count.
func parsePrometheus(text string) (map[string]float64, error) {
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("does not end with a newline")
	}
	samples := map[string]float64{}
	seen := map[string]bool{} // families met so far
	var fam, kind string      // the family whose lines these are, and its TYPE
	var help bool
	var les []float64 // the current histogram's bucket bounds and counts
	var buckets []float64
	endFamily := func() error {
		if kind != "histogram" {
			return nil
		}
		if len(les) == 0 || !isInf(les[len(les)-1]) {
			return fmt.Errorf("histogram %s: the last bucket is not le=\"+Inf\"", fam)
		}
		for i := 1; i < len(les); i++ {
			if les[i] <= les[i-1] || buckets[i] < buckets[i-1] {
				return fmt.Errorf("histogram %s: bucket %d (le %v, %v) after (le %v, %v): not increasing or not cumulative", fam, i, les[i], buckets[i], les[i-1], buckets[i-1])
			}
		}
		count, ok := samples[fam+"_count"]
		if !ok || count != buckets[len(buckets)-1] {
			return fmt.Errorf("histogram %s: _count %v, want the +Inf bucket's %v", fam, count, buckets[len(buckets)-1])
		}
		if _, ok := samples[fam+"_sum"]; !ok {
			return fmt.Errorf("histogram %s: no _sum", fam)
		}
		return nil
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n := i + 1
		if m := metaLine.FindStringSubmatch(line); m != nil {
			if m[2] != fam {
				if err := endFamily(); err != nil {
					return nil, err
				}
				if seen[m[2]] {
					return nil, fmt.Errorf("line %d: family %s again, after others", n, m[2])
				}
				seen[m[2]] = true
				fam, kind, help, les, buckets = m[2], "", false, nil, nil
			}
			switch {
			case m[1] == "HELP" && (help || kind != ""):
				return nil, fmt.Errorf("line %d: a second HELP, or HELP after TYPE, for %s", n, fam)
			case m[1] == "HELP":
				help = true
			case kind != "":
				return nil, fmt.Errorf("line %d: a second TYPE for %s", n, fam)
			case m[3] != "counter" && m[3] != "gauge" && m[3] != "histogram":
				return nil, fmt.Errorf("line %d: type %q", n, m[3])
			default:
				kind = m[3]
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			return nil, fmt.Errorf("line %d: %q: cairn writes no blank lines or comments", n, line)
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: %q is not `name{labels} value`", n, line)
		}
		name, labels := m[1], m[2]
		if !help || kind == "" {
			return nil, fmt.Errorf("line %d: sample of %s before its HELP and TYPE", n, name)
		}
		suffix, ok := strings.CutPrefix(name, fam)
		if !ok || (suffix != "" && (kind != "histogram" || (suffix != "_bucket" && suffix != "_sum" && suffix != "_count"))) {
			return nil, fmt.Errorf("line %d: sample %s in family %s (%s)", n, name, fam, kind)
		}
		if kind == "histogram" && suffix == "" {
			return nil, fmt.Errorf("line %d: histogram sample %s without _bucket, _sum or _count", n, name)
		}
		lm, err := parseLabels(labels)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value %q: %v", n, m[3], err)
		}
		if kind == "counter" && (!strings.HasSuffix(fam, "_total") || v < 0) {
			return nil, fmt.Errorf("line %d: counter %s = %v: want a name ending _total and a value not negative", n, fam, v)
		}
		if suffix == "_bucket" {
			le, err := strconv.ParseFloat(lm["le"], 64)
			if err != nil || len(lm) != 1 {
				return nil, fmt.Errorf("line %d: bucket labels %s, want one le holding a number", n, labels)
			}
			les, buckets = append(les, le), append(buckets, v)
		}
		series := name + labels
		if _, dup := samples[series]; dup {
			return nil, fmt.Errorf("line %d: %s twice", n, series)
		}
		samples[series] = v
	}
	if err := endFamily(); err != nil {
		return nil, err
	}
	return samples, nil
}

// parseLabels parses `{a="x",b="y"}` ("" for none).
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	rest := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	for rest != "" {
		m := labelPair.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("labels %s: cannot read %q", s, rest)
		}
		if _, dup := out[m[1]]; dup {
			return nil, fmt.Errorf("labels %s: %s twice", s, m[1])
		}
		out[m[1]] = m[2]
		rest = rest[len(m[0]):]
	}
	return out, nil
}

func isInf(f float64) bool { return math.IsInf(f, 1) }
