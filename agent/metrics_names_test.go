package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// TestMetricsSeriesUnchanged reads a server's cairn_ series (name, type,
// label names and help) after a service, a check and a DNS question, and
// compares them with testdata/metrics_series.golden: dashboards, alerts
// and the fault suite read these names, so a rename or a lost series must
// be deliberate. CAIRN_UPDATE_GOLDEN=1 rewrites the file.
func TestMetricsSeriesUnchanged(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.ServerConfig(t, "s1", 1))
	c := client(t, a)
	ctx := context.Background()
	if err := c.Agent().ServiceRegister(ctx, &api.AgentServiceRegistration{Name: "web", Port: 8080}); err != nil {
		t.Fatal(err)
	}
	reg := &api.AgentCheckRegistration{ID: "ttl", Name: "ttl", AgentServiceCheck: api.AgentServiceCheck{TTL: "1h", Status: "passing"}}
	if err := c.Agent().CheckRegister(ctx, reg); err != nil {
		t.Fatal(err)
	}
	query(t, a, "udp", "web.service.cluster", dns.TypeSRV)
	var got []string
	waittest.For(t, 20*time.Second, "the DNS question counted", func() error {
		body, _ := get(t, a, "/v1/agent/metrics?format=prometheus")
		got = seriesLines(t, body)
		// Consul's names too (telemetry.consul_aliases): the autopilot
		// health once the leader judged it, the register's timing once
		// the agent's sync registered the service.
		for _, name := range []string{"cairn_dns_questions_total", "consul_autopilot_healthy", "consul_catalog_register"} {
			if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, name+" ") }) {
				return errors.New("no " + name + " yet")
			}
		}
		return nil
	})
	golden := filepath.Join("testdata", "metrics_series.golden")
	if os.Getenv("CAIRN_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("series gone or changed: %s", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Errorf("series not in %s: %s", golden, l)
		}
	}
}

// seriesLines is one line per cairn_ and consul_ family in text (the libraries'
// left out): its name, type,
// label names and help, sorted.
func seriesLines(t *testing.T, text string) []string {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the text is not Prometheus's format: %v", err)
	}
	var out []string
	for name, mf := range fams {
		// Series the libraries emit through go-metrics (Raft's,
		// memberlist's) have their name for help and come and go with
		// what the libraries did; they are not cairn's to keep.
		if !strings.HasPrefix(name, "cairn_") && !strings.HasPrefix(name, "consul_") || !strings.Contains(mf.GetHelp(), " ") {
			continue
		}
		var labels []string
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		slices.Sort(labels)
		out = append(out, name+" "+mf.GetType().String()+" {"+strings.Join(labels, ",")+"} "+mf.GetHelp())
	}
	slices.Sort(out)
	return out
}
