package e2e

import (
	"strings"
	"testing"
)

// TestDigEveryNameForm asks the real binary, with dig, every form of name
// the DNS interface answers.
func TestDigEveryNameForm(t *testing.T) {
	t.Parallel()
	requireDig(t)
	a := startAgent(t, "-dev", "-node-meta", "rack=r1", "-alt-domain", "consul.")
	addr := a.httpAddr()
	mustCLI(t, addr, "services", "register", "-name", "web", "-port", "8080", "-tag", "v1")
	mustCLI(t, addr, "services", "register", "-name", "db", "-id", "db-1", "-port", "5432", "-address", "10.0.0.9")

	for _, tc := range []struct {
		args   []string
		status string
		short  string // dig +short's output, "" for none
	}{
		{[]string{"web.service.dc1.cluster", "SRV"}, "NOERROR", "1 1 8080 e2e.node.dc1.cluster."},
		{[]string{"_web._v1.service.cluster", "SRV"}, "NOERROR", "1 1 8080 e2e.node.dc1.cluster."},
		{[]string{"_web._tcp.service.dc1.cluster", "SRV"}, "NOERROR", "1 1 8080 e2e.node.dc1.cluster."},
		{[]string{"db.service.cluster", "SRV"}, "NOERROR", "1 1 5432 0a000009.addr.dc1.cluster."},
		{[]string{"0a000009.addr.dc1.cluster", "A"}, "NOERROR", "10.0.0.9"},
		{[]string{"e2e.node.dc1.cluster", "TXT"}, "NOERROR", `"rack=r1"`},
		{[]string{"cluster", "SOA"}, "NOERROR", ""}, // checked below
		{[]string{"service.cluster", "A"}, "NOERROR", ""},
		{[]string{"dc1.cluster", "A"}, "NOERROR", ""},
		{[]string{"-x", "10.0.0.9"}, "NOERROR", "db.service.dc1.cluster."},
		{[]string{"-x", "127.0.0.1"}, "NOERROR", "e2e.node.dc1.cluster."},
		{[]string{"web.service.consul", "A"}, "NOERROR", "127.0.0.1"},
		{[]string{"web.service.cluster", "ANY"}, "NOERROR", "127.0.0.1"},
		{[]string{"nope.service.cluster", "A"}, "NXDOMAIN", ""},
		{[]string{"example.org", "A"}, "REFUSED", ""},
	} {
		out := dig(t, a.dnsPort, tc.args...)
		if got := digStatus(out); got != tc.status {
			t.Errorf("dig %s: got status %s, want %s:\n%s", strings.Join(tc.args, " "), got, tc.status, out)
			continue
		}
		if tc.short == "" {
			continue
		}
		if got := strings.TrimSpace(dig(t, a.dnsPort, append(tc.args, "+short")...)); got != tc.short {
			t.Errorf("dig %s +short: got %q, want %q", strings.Join(tc.args, " "), got, tc.short)
		}
	}
	if soa := strings.Fields(dig(t, a.dnsPort, "cluster", "SOA", "+short")); len(soa) != 7 || soa[0] != "ns.cluster." {
		t.Errorf("dig cluster SOA +short: got %q, want ns.cluster. hostmaster.cluster. and five numbers", soa)
	}
}
