package agent

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/catalog"
)

// startForHealth starts a dev agent and registers web-1 (10.3.0.1) and
// web-2 (10.3.0.2) on its node through its own server. Health checks have
// no API yet, so the test writes them through the server as the check
// runners will.
func startForHealth(t *testing.T, mutate func(*config.Config)) *Agent {
	t.Helper()
	cfg := config.Default()
	cfg.Dev, cfg.NodeName, cfg.Ports = true, "test", config.Ports{HTTPS: -1, DNSTLS: -1}
	mutate(&cfg)
	a, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	for i, addr := range []string{"10.3.0.1", "10.3.0.2"} {
		svc := &catalog.Service{ID: fmt.Sprintf("web-%d", i+1), Service: "web", Port: 80, Address: addr}
		if err := a.local.AddService(ctx, svc, nil); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// setCheck writes a check on web-<n>, or on the node when n is 0.
func setCheck(t *testing.T, a *Agent, n int, status catalog.HealthStatus) {
	t.Helper()
	c := &catalog.Check{CheckID: "check", Name: "check", Status: status}
	if n > 0 {
		c.CheckID, c.ServiceID = fmt.Sprintf("check-%d", n), fmt.Sprintf("web-%d", n)
	}
	err := a.server.Register(context.Background(), &catalog.RegisterRequest{
		Node: "test", SkipNodeUpdate: true, Checks: []*catalog.Check{c},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func addrs(t *testing.T, a *Agent) (int, []string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("web.service.cluster.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, a.DNSAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rr := range r.Answer {
		out = append(out, rr.(*dns.A).A.String())
	}
	return r.Rcode, out
}

// addrsEventually polls a's answer until ok accepts it or 5 seconds pass,
// and returns the last one.
func addrsEventually(t *testing.T, a *Agent, ok func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, got := addrs(t, a)
		if ok(got) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDNSLeavesOutUnhealthyInstances(t *testing.T) {
	t.Parallel()
	a := startForHealth(t, func(*config.Config) {})
	for _, step := range []struct {
		what   string
		check  int
		status catalog.HealthStatus
		want   int // addresses answered
	}{
		{"web-1 critical", 1, catalog.HealthCritical, 1},
		{"web-1 warning counts as healthy", 1, catalog.HealthWarning, 2},
		{"web-2 in maintenance", 2, catalog.HealthMaintenance, 1},
		{"the node critical takes all out", 0, catalog.HealthCritical, 0},
		{"the node passing again", 0, catalog.HealthPassing, 1},
	} {
		setCheck(t, a, step.check, step.status)
		// DNS answers from the agent's cache, which the change reaches
		// through its blocking query a moment later.
		if got := addrsEventually(t, a, func(got []string) bool { return len(got) == step.want }); len(got) != step.want {
			t.Errorf("%s: got %v, want %d addresses", step.what, got, step.want)
		}
	}
}

func TestDNSOnlyPassing(t *testing.T) {
	t.Parallel()
	a := startForHealth(t, func(c *config.Config) { c.OnlyPassing = true })
	setCheck(t, a, 1, catalog.HealthWarning)
	if got := addrsEventually(t, a, func(got []string) bool { return len(got) == 1 }); len(got) != 1 || got[0] != "10.3.0.2" {
		t.Errorf("only_passing with web-1 warning: got %v, want only 10.3.0.2", got)
	}
}

func TestDNSUnhealthyAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  string
		rcode int
		n     int
	}{
		{"", dns.RcodeSuccess, 0}, // default nodata
		{"nxdomain", dns.RcodeNameError, 0},
		{"all", dns.RcodeSuccess, 2},
	} {
		a := startForHealth(t, func(c *config.Config) {
			if tc.mode != "" { // "" keeps the default
				c.Resolver.UnhealthyAnswer = tc.mode
			}
		})
		setCheck(t, a, 0, catalog.HealthCritical)
		var rcode int
		var got []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			rcode, got = addrs(t, a)
			if rcode == tc.rcode && len(got) == tc.n || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if rcode != tc.rcode || len(got) != tc.n {
			t.Errorf("unhealthy_answer %q: got %s %v, want %s with %d addresses", tc.mode, dns.RcodeToString[rcode], got, dns.RcodeToString[tc.rcode], tc.n)
		}
	}
}
