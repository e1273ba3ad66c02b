package e2e

import (
	"strings"
	"testing"
)

// TestHealthChecksWithTheCLI drives a TTL check through the binary's CLI
// and watches DNS follow it: an instance starts critical (not answered),
// is answered once its application reports passing, leaves the answers in
// maintenance mode and comes back after it.
func TestHealthChecksWithTheCLI(t *testing.T) {
	t.Parallel()
	requireDig(t)
	a := startAgent(t, "-dev")
	addr := a.httpAddr()
	srv := func() string {
		return strings.TrimSpace(dig(t, a.dnsPort, "web.service.cluster", "SRV", "+short"))
	}

	mustCLI(t, addr, "services", "register", "-name", "web", "-port", "8080", "-check-ttl", "1h")
	if got := srv(); got != "" {
		t.Fatalf("SRV before the first report: got %q, want none (checks start critical)", got)
	}
	out := mustCLI(t, addr, "checks", "list")
	if !strings.Contains(out, "service:web") || !strings.Contains(out, "critical") {
		t.Errorf("checks list before the report: got\n%s\nwant service:web critical", out)
	}

	mustCLI(t, addr, "checks", "pass", "service:web")
	if got := srv(); got != webSRV {
		t.Fatalf("SRV after checks pass: got %q, want %q", got, webSRV)
	}
	out = mustCLI(t, addr, "health", "web")
	if !strings.Contains(out, "passing") {
		t.Errorf("health web: got\n%s\nwant the instance passing", out)
	}

	mustCLI(t, addr, "maint", "-enable", "-service", "web", "-reason", "deploy")
	if got := srv(); got != "" {
		t.Errorf("SRV in maintenance: got %q, want none", got)
	}
	mustCLI(t, addr, "maint", "-disable", "-service", "web")
	if got := srv(); got != webSRV {
		t.Errorf("SRV after maintenance: got %q, want %q", got, webSRV)
	}

	mustCLI(t, addr, "checks", "fail", "-note", "broken", "service:web")
	if got := srv(); got != "" {
		t.Errorf("SRV after checks fail: got %q, want none", got)
	}
}
