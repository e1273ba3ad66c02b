package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/tlsutil/tlsutiltest"
)

// dnsReadRules is the least a DNS token needs: services and nodes to
// answer them, prepared queries to hear of their changes.
const dnsReadRules = `service_prefix "" { policy = "read" }
node_prefix "" { policy = "read" }
query_prefix "" { policy = "read" }`

// TestDNSTokenAnswersUnderDefaultDeny: a secured cluster with default
// deny and an anonymous token holding no policy, whose agents answer DNS
// with acl.tokens.dns. DNS answers a service, a prepared query and a node
// on a client agent; the same catalog read over HTTP with no token, the
// ?cached one that shares the DNS cache included, shows nothing.
func TestDNSTokenAnswersUnderDefaultDeny(t *testing.T) {
	t.Parallel()
	const dnsSecret = "5d2c6b1e-3f4a-4c8d-9e7f-1a2b3c4d5e6f"
	ca := tlsutiltest.NewCA(t)
	scfg := secured(t, agenttest.ServerConfig(t, "s1", 1), ca)
	ccfg := secured(t, agenttest.ClientConfig(t, "c1", agenttest.GossipAddr(scfg)), ca)
	scfg.ACL.Tokens.DNS, ccfg.ACL.Tokens.DNS = dnsSecret, dnsSecret
	s := agenttest.Start(t, scfg)
	c := agenttest.Start(t, ccfg)
	waitManagement(t, s)

	mustCall(t, s, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{"Name": "dns", "Rules": dnsReadRules}, nil)
	mustCall(t, s, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{
		"SecretID": dnsSecret, "Description": "DNS", "Policies": []map[string]string{{"Name": "dns"}}}, nil)
	mustCall(t, c, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{"Name": "web", "Port": 80, "Address": "10.1.2.3"}, nil)
	mustCall(t, s, mgmtSecret, "POST", "/v1/query", map[string]any{"Name": "webq", "Service": map[string]any{"Service": "web"}}, nil)

	for _, name := range []string{"web.service.cluster", "webq.query.cluster"} {
		waittest.For(t, aclTestWait, name+" A from the client agent", func() error {
			r := query(t, c, "udp", name, dns.TypeA)
			if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), "10.1.2.3") {
				return fmt.Errorf("got %s %v", dns.RcodeToString[r.Rcode], r.Answer)
			}
			return nil
		})
	}
	waittest.For(t, aclTestWait, "c1.node.cluster A", func() error {
		if r := query(t, c, "udp", "c1.node.cluster", dns.TypeA); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			return fmt.Errorf("got %s %v", dns.RcodeToString[r.Rcode], r.Answer)
		}
		return nil
	})

	for _, path := range []string{"/v1/catalog/services", "/v1/catalog/service/web", "/v1/health/service/web", "/v1/health/service/web?cached", "/v1/query"} {
		code, body := call(t, c, "", "GET", path, nil)
		if code == http.StatusOK && (strings.Contains(string(body), "web") || strings.Contains(string(body), "10.1.2.3")) {
			t.Errorf("anonymous GET %s: got %d %s, want nothing of web", path, code, body)
		}
	}
}
