package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// webSRV is the answer to an SRV question for the tour's web service, as
// dig +short prints it.
const webSRV = "1 1 8080 e2e.node.dc1.cluster."

// TestTour follows the tour of the README with the real binary and dig:
// register a service with the CLI, find it by DNS over UDP and TCP, by tag
// and by node, list it, deregister it, and see it gone.
func TestTour(t *testing.T) {
	t.Parallel()
	requireDig(t)
	a := startAgent(t, "-dev")
	addr := a.httpAddr()

	// The agent says where it is as it starts: one line per milestone,
	// in order.
	milestones := []string{`msg="agent started"`, `msg="joined the cluster"`, `msg="leader known"`, `msg="ready: this node is in the catalog, DNS answers"`}
	waitOutput(t, a, milestones[len(milestones)-1])
	logs, at := a.out.String(), -1
	for _, m := range milestones {
		i := strings.Index(logs, m)
		if i < at {
			t.Errorf("milestone %s: at %d in the output, want after the one before (%d)\n%s", m, i, at, logs)
		}
		if strings.Count(logs, m) != 1 {
			t.Errorf("milestone %s: logged %d times, want once", m, strings.Count(logs, m))
		}
		at = i
	}

	if got, want := mustCLI(t, addr, "services", "register", "-name", "web", "-port", "8080", "-tag", "v1"),
		"Registered service: web\n"; got != want {
		t.Errorf("register: got %q, want %q", got, want)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"SRV", []string{"web.service.dc1.cluster", "SRV"}, webSRV},
		{"SRV without datacenter", []string{"web.service.cluster", "SRV"}, webSRV},
		{"A", []string{"web.service.cluster", "A"}, "127.0.0.1"},
		{"SRV over TCP", []string{"+tcp", "web.service.cluster", "SRV"}, webSRV},
		{"tag", []string{"v1.web.service.cluster", "SRV"}, webSRV},
		{"node", []string{"e2e.node.cluster", "A"}, "127.0.0.1"},
	} {
		got := strings.TrimSpace(dig(t, a.dnsPort, append(tc.args, "+short")...))
		if got != tc.want {
			t.Errorf("%s: dig %s +short: got %q, want %q", tc.name, strings.Join(tc.args, " "), got, tc.want)
		}
	}

	// +short hides the transport; the full output names it.
	out := dig(t, a.dnsPort, "+tcp", "web.service.cluster", "SRV")
	if !strings.Contains(out, "(TCP)") || digStatus(out) != "NOERROR" {
		t.Errorf("dig +tcp web.service.cluster SRV: got status %q, want NOERROR over TCP:\n%s", digStatus(out), out)
	}

	out = dig(t, a.dnsPort, "v2.web.service.cluster", "SRV")
	if got := digStatus(out); got != "NXDOMAIN" {
		t.Errorf("dig v2.web.service.cluster SRV (no such tag): got status %q, want NXDOMAIN:\n%s", got, out)
	}

	out = mustCLI(t, addr, "services", "list")
	if !tableRow(out, "ID", "Name", "Address", "Port", "Tags") || !tableRow(out, "web", "web", "8080", "v1") {
		t.Errorf("services list: got\n%s\nwant a header and the row web web 8080 v1", out)
	}
	out = mustCLI(t, addr, "catalog", "services")
	if !tableRow(out, "web") {
		t.Errorf("catalog services: got\n%s\nwant a line web", out)
	}
	out = mustCLI(t, addr, "catalog", "nodes")
	if !tableRow(out, "e2e", "127.0.0.1", "dc1") {
		t.Errorf("catalog nodes: got\n%s\nwant the row e2e 127.0.0.1 dc1", out)
	}

	if got, want := mustCLI(t, addr, "services", "deregister", "-id", "web"), "Deregistered service: web\n"; got != want {
		t.Errorf("deregister: got %q, want %q", got, want)
	}
	out = dig(t, a.dnsPort, "web.service.cluster", "SRV")
	if got := digStatus(out); got != "NXDOMAIN" {
		t.Errorf("dig web.service.cluster SRV after deregister: got status %q, want NXDOMAIN:\n%s", got, out)
	}
	if answers := digSection(out, "ANSWER"); len(answers) != 0 {
		t.Errorf("dig web.service.cluster SRV after deregister: got answers %v, want none", answers)
	}
	auth := digSection(out, "AUTHORITY")
	if len(auth) != 1 || len(auth[0]) < 5 || auth[0][0] != "cluster." || auth[0][3] != "SOA" {
		t.Errorf("dig web.service.cluster SRV after deregister: got authority %v, want the SOA of cluster.", auth)
	}
	if out := mustCLI(t, addr, "services", "list"); tableRow(out, "web", "web", "8080", "v1") {
		t.Errorf("services list after deregister: got\n%s\nwant no web", out)
	}
	if out := mustCLI(t, addr, "catalog", "services"); tableRow(out, "web") {
		t.Errorf("catalog services after deregister: got\n%s\nwant no web", out)
	}

	a.stop(t)
}

// TestRestartKeepsRegistrations stops an agent with a data directory and
// starts it again: its services are back in DNS and in the CLI without
// being registered again.
func TestRestartKeepsRegistrations(t *testing.T) {
	t.Parallel()
	requireDig(t)
	args := []string{"-server", "-data-dir", t.TempDir()}
	const dbSRV = "1 1 5432 e2e.node.dc1.cluster."

	a := startAgent(t, args...)
	mustCLI(t, a.httpAddr(), "services", "register", "-name", "db", "-port", "5432")
	if got := strings.TrimSpace(dig(t, a.dnsPort, "db.service.cluster", "SRV", "+short")); got != dbSRV {
		t.Fatalf("before restart: dig db.service.cluster SRV +short: got %q, want %q", got, dbSRV)
	}
	a.stop(t)
	if _, stderr, code := runCLI(t, a.httpAddr(), "services", "list"); code != 1 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("services list while the agent is stopped: got exit code %d, stderr %q, want 1 and one line", code, stderr)
	}

	// The ports were just released: the new agent takes them again unless
	// something else has since.
	b := startAgentOn(t, a.dnsPort, a.httpPort, args...)
	if got := strings.TrimSpace(dig(t, b.dnsPort, "db.service.cluster", "SRV", "+short")); got != dbSRV {
		t.Errorf("after restart: dig db.service.cluster SRV +short: got %q, want %q", got, dbSRV)
	}
	if out := mustCLI(t, b.httpAddr(), "services", "list"); !tableRow(out, "db", "db", "5432") {
		t.Errorf("after restart: services list: got\n%s\nwant the row db db 5432", out)
	}
	b.stop(t)
}

// TestCLIAgentUnreachable runs client commands against a port nothing
// listens on, as when the agent is stopped: each exits 1 with one line on
// stderr saying so.
func TestCLIAgentUnreachable(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t)) // free: nothing listens there
	for _, args := range [][]string{
		{"services", "list"},
		{"services", "register", "-name", "web", "-port", "8080"},
		{"services", "deregister", "-id", "web"},
		{"catalog", "services"},
		{"catalog", "nodes"},
	} {
		stdout, stderr, code := runCLI(t, addr, args...)
		cmd := "cairn " + strings.Join(args, " ")
		if code != 1 {
			t.Errorf("%s: got exit code %d, want 1", cmd, code)
		}
		if stdout != "" {
			t.Errorf("%s: got stdout %q, want none", cmd, stdout)
		}
		lines := slices.Collect(strings.Lines(stderr))
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "Error: ") || !strings.Contains(lines[0], addr) {
			t.Errorf("%s: got stderr %q, want one line \"Error: …\" naming %s", cmd, stderr, addr)
		}
	}
}
