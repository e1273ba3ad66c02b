package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
)

// httpDo sends body (none when "") with method to path on a's HTTP API and
// returns the status and the body.
func httpDo(t *testing.T, a *agent.Agent, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+a.HTTPAddr().String()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b.Bytes()
}

// executeBody is what the tests read of GET /v1/query/<id>/execute.
type executeBody struct {
	Service    string
	Datacenter string
	Failovers  int
	DNS        struct{ TTL string }
	Nodes      []struct {
		Node    struct{ Node string }
		Service struct{ ID string }
		Checks  []struct{ CheckID, Status string }
	}
}

func execute(a *agent.Agent, idOrName string) (executeBody, error) {
	var out executeBody
	err := getJSON(a, "/v1/query/"+idOrName+"/execute", &out)
	return out, err
}

// createQuery defines a query over a's HTTP API and returns its ID.
func createQuery(t *testing.T, a *agent.Agent, body string) string {
	t.Helper()
	code, resp := httpDo(t, a, http.MethodPost, "/v1/query", body)
	if code != http.StatusOK {
		t.Fatalf("POST /v1/query: %d %s", code, resp)
	}
	var created struct{ ID string }
	if err := json.Unmarshal(resp, &created); err != nil || created.ID == "" {
		t.Fatalf("POST /v1/query: answer %s (%v), want an ID", resp, err)
	}
	return created.ID
}

// queryAnswers waits until a's DNS answers name of qtype with rcode and n
// records, and returns the reply.
func queryAnswers(t *testing.T, a *agent.Agent, name string, qtype uint16, rcode, n int) *dns.Msg {
	t.Helper()
	var reply *dns.Msg
	waittest.For(t, 10*time.Second, fmt.Sprintf("%s %s → %s with %d", name, dns.TypeToString[qtype], dns.RcodeToString[rcode], n), func() error {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, a.DNSAddr().String())
		if err != nil {
			return err
		}
		if r.Rcode != rcode || len(r.Answer) != n {
			return fmt.Errorf("got %s with %d answers", dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		reply = r
		return nil
	})
	return reply
}

// TestPreparedQueryHTTPAndDNS defines a query over HTTP on a dev agent,
// reads and executes it over HTTP, asks for it by name and ID over DNS,
// watches it follow the health of its instances, and refuses bad
// definitions with a 400 naming the field.
func TestPreparedQueryHTTPAndDNS(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	put(t, a, "/v1/agent/service/register",
		`{"ID":"web-1","Name":"web","Port":8080,"Tags":["v1"],"Check":{"CheckID":"web-1-ttl","TTL":"1h","Status":"passing"}}`)
	put(t, a, "/v1/agent/service/register", `{"ID":"web-2","Name":"web","Port":8081,"Address":"10.0.0.2","Tags":["v2"]}`)

	id := createQuery(t, a, `{"Name":"web-v1","Service":{"Service":"web","Tags":["!v2"],"Failover":{"Datacenters":["dc2"]}},"DNS":{"TTL":"7s"}}`)
	var list []struct {
		ID, Name string
		Service  struct{ Service string }
	}
	if err := getJSON(a, "/v1/query/"+id, &list); err != nil || len(list) != 1 || list[0].Name != "web-v1" || list[0].ID != id {
		t.Fatalf("GET /v1/query/%s: got %+v (%v), want web-v1", id, list, err)
	}
	if err := getJSON(a, "/v1/query", &list); err != nil || len(list) != 1 {
		t.Fatalf("GET /v1/query: got %+v (%v), want one query", list, err)
	}

	got, err := execute(a, "web-v1")
	if err != nil || got.Datacenter != "dc1" || got.Failovers != 0 || len(got.Nodes) != 1 ||
		got.Nodes[0].Service.ID != "web-1" || got.DNS.TTL != "7s" || got.Service != "web" {
		t.Fatalf("execute web-v1: got %+v (%v), want web-1 from dc1", got, err)
	}

	r := queryAnswers(t, a, "web-v1.query.cluster", dns.TypeSRV, dns.RcodeSuccess, 1)
	if srv := r.Answer[0].(*dns.SRV); srv.Port != 8080 || srv.Target != "test.node.dc1.cluster." || srv.Hdr.Ttl != 7 {
		t.Errorf("SRV web-v1.query.cluster: got %v, want port 8080 on test.node.dc1.cluster. with TTL 7", srv)
	}
	queryAnswers(t, a, id+".query.dc1.cluster", dns.TypeA, dns.RcodeSuccess, 1)
	queryAnswers(t, a, "nope.query.cluster", dns.TypeA, dns.RcodeNameError, 0)

	// The only matching instance turns critical: nothing local, and dc2
	// is no datacenter this server's WAN pool knows, so the answer is
	// empty.
	put(t, a, "/v1/agent/check/fail/web-1-ttl", "")
	queryAnswers(t, a, "web-v1.query.cluster", dns.TypeSRV, dns.RcodeNameError, 0)
	if got, err := execute(a, id); err != nil || len(got.Nodes) != 0 || got.Failovers != 1 || got.Datacenter != "dc1" {
		t.Errorf("execute with web-1 critical: got %+v (%v), want no nodes after 1 failover", got, err)
	}
	put(t, a, "/v1/agent/check/pass/web-1-ttl", "")
	queryAnswers(t, a, "web-v1.query.cluster", dns.TypeA, dns.RcodeSuccess, 1)

	// Update: no tag filter, both instances.
	code, body := httpDo(t, a, http.MethodPut, "/v1/query/"+id, `{"Name":"web-v1","Service":{"Service":"web"}}`)
	if code != http.StatusOK {
		t.Fatalf("PUT /v1/query/%s: %d %s", id, code, body)
	}
	queryAnswers(t, a, "web-v1.query.cluster", dns.TypeSRV, dns.RcodeSuccess, 2)

	for _, tt := range []struct{ method, path, body, field string }{
		{http.MethodPost, "/v1/query", `{"Name":"x"}`, "Service.Service"},
		{http.MethodPost, "/v1/query", `{"Service":{"Service":"web","Failover":{"NearestN":-1}}}`, "Service.Failover.NearestN"},
		{http.MethodPost, "/v1/query", `{"Service":{"Service":"web","Failover":{"NearestN":"two"}}}`, "Service.Failover.NearestN"},
		{http.MethodPost, "/v1/query", `{"Service":{"Service":"web"},"DNS":{"TTL":"soon"}}`, "DNS.TTL"},
		{http.MethodPost, "/v1/query", `{"Name":"web-v1","Service":{"Service":"db"}}`, "Name"},
		{http.MethodPost, "/v1/query", `{"Service":{"Service":"web"},"Template":{"Type":"name_prefix_match"}}`, "Template.Type"},
		{http.MethodPut, "/v1/query/" + id, `{"Service":{"Service":"web_1"}}`, "Service.Service"},
	} {
		code, body := httpDo(t, a, tt.method, tt.path, tt.body)
		var e struct{ Field string }
		_ = json.Unmarshal(body, &e)
		if code != http.StatusBadRequest || e.Field != tt.field {
			t.Errorf("%s %s %s: got %d %s, want 400 naming %s", tt.method, tt.path, tt.body, code, body, tt.field)
		}
	}

	if code, body := httpDo(t, a, http.MethodDelete, "/v1/query/"+id, ""); code != http.StatusOK {
		t.Fatalf("DELETE /v1/query/%s: %d %s", id, code, body)
	}
	for _, path := range []string{"/v1/query/" + id, "/v1/query/" + id + "/execute", "/v1/query/web-v1/execute"} {
		if code, body := httpDo(t, a, http.MethodGet, path, ""); code != http.StatusNotFound {
			t.Errorf("GET %s after delete: got %d %s, want 404", path, code, body)
		}
	}
	queryAnswers(t, a, "web-v1.query.cluster", dns.TypeA, dns.RcodeNameError, 0)
}

// TestPreparedQueryThroughClient defines and runs a query through a
// client agent, whose calls go to the servers over RPC.
func TestPreparedQueryThroughClient(t *testing.T) {
	t.Parallel()
	// One server, which joins the client as the client joins it.
	srvCfg := agenttest.ServerConfig(t, "s1", 1)
	c := &agenttest.Cluster{Configs: []config.Config{srvCfg}}
	clCfg := agenttest.ClientConfig(t, "cl", c.GossipAddr(0))
	c.Configs[0].Join = []string{fmt.Sprintf("127.0.0.1:%d", clCfg.Ports.SerfLAN)}
	c.Agents = []*agent.Agent{agenttest.Start(t, c.Configs[0])}
	cl := agenttest.Start(t, clCfg)
	leaderOf(t, c, []int{0}, 1)
	knowsLeader(t, cl)
	put(t, cl, "/v1/agent/service/register", `{"Name":"api","Port":9090}`)

	id := createQuery(t, cl, `{"Name":"api-q","Service":{"Service":"api"}}`)
	waittest.For(t, 10*time.Second, "execute api-q through the client", func() error {
		got, err := execute(cl, id)
		if err != nil {
			return err
		}
		if len(got.Nodes) != 1 || got.Nodes[0].Node.Node != "cl" || got.Datacenter != "dc1" {
			return fmt.Errorf("got %+v", got)
		}
		return nil
	})
	answersWith(t, cl, "api-q.query.cluster", "cl.node.dc1.cluster.")
	answersWith(t, c.Agents[0], "api-q.query.dc1.cluster", "cl.node.dc1.cluster.")
	code, body := httpDo(t, cl, http.MethodPost, "/v1/query", `{"Service":{"Service":"api","Failover":{"NearestN":-3}}}`)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "Service.Failover.NearestN") {
		t.Errorf("bad definition through the client: got %d %s, want 400 naming Service.Failover.NearestN", code, body)
	}
}

// TestPreparedQueryAPIClient drives the /v1/query endpoints with the api
// package's client.
func TestPreparedQueryAPIClient(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	put(t, a, "/v1/agent/service/register", `{"Name":"db","Port":5432,"Tags":["primary"]}`)
	ctx := context.Background()
	pq := client(t, a).PreparedQuery()

	def := &api.PreparedQueryDefinition{Name: "db-primary", Service: api.ServiceQuery{
		Service: "db", Tags: []string{"primary"}, Failover: api.QueryFailoverOptions{NearestN: 2},
	}, DNS: api.QueryDNSOptions{TTL: "30s"}}
	id, err := pq.Create(ctx, def)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, _, err := pq.Get(ctx, id)
	if err != nil || len(got) != 1 || got[0].Name != "db-primary" || got[0].Service.Failover.NearestN != 2 || got[0].DNS.TTL != "30s" {
		t.Fatalf("Get: got %+v (%v)", got, err)
	}
	res, err := pq.Execute(ctx, "db-primary", "")
	if err != nil || len(res.Nodes) != 1 || res.Nodes[0].Service.Port != 5432 || res.Datacenter != "dc1" {
		t.Fatalf("Execute: got %+v (%v)", res, err)
	}
	got[0].Service.Tags = []string{"replica"}
	if err := pq.Update(ctx, got[0]); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if res, err := pq.Execute(ctx, id, ""); err != nil || len(res.Nodes) != 0 {
		t.Errorf("Execute after update: got %+v (%v), want no nodes", res, err)
	}
	_, err = pq.Create(ctx, &api.PreparedQueryDefinition{Service: api.ServiceQuery{Service: "db", Failover: api.QueryFailoverOptions{NearestN: -1}}})
	if se, ok := errors.AsType[*api.StatusError](err); !ok || se.Code != http.StatusBadRequest || se.Field != "Service.Failover.NearestN" {
		t.Errorf("Create with NearestN -1: got %v, want a 400 naming Service.Failover.NearestN", err)
	}
	if err := pq.Delete(ctx, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if list, _, err := pq.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after delete: got %d (%v), want 0", len(list), err)
	}
}

// cacheCounter reads one of the cache's counters from the agent's
// Prometheus metrics.
func cacheCounter(t *testing.T, a *agent.Agent, name string) int {
	t.Helper()
	code, body := httpDo(t, a, http.MethodGet, "/v1/agent/metrics?format=prometheus", "")
	if code != http.StatusOK {
		t.Fatalf("metrics: %d %s", code, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, v, err)
			}
			return n
		}
	}
	t.Fatalf("metrics lack %s:\n%s", name, body)
	return 0
}

// TestPreparedQueryAnsweredFromCache: once a query name has been asked,
// asking it again is answered from the agent's cache (no execution on a
// server), and a change to the query's service still reaches the answer.
func TestPreparedQueryAnsweredFromCache(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	put(t, a, "/v1/agent/service/register", `{"ID":"web-1","Name":"web","Port":8080}`)
	createQuery(t, a, `{"Name":"pq","Service":{"Service":"web"}}`)
	queryAnswers(t, a, "pq.query.cluster", dns.TypeSRV, dns.RcodeSuccess, 1)

	hits, misses := cacheCounter(t, a, "cairn_cache_hits_total"), cacheCounter(t, a, "cairn_cache_misses_total")
	for range 5 {
		queryAnswers(t, a, "pq.query.cluster", dns.TypeSRV, dns.RcodeSuccess, 1)
	}
	if got := cacheCounter(t, a, "cairn_cache_hits_total") - hits; got < 5 {
		t.Errorf("cache hits for 5 repeated questions: got %d, want 5", got)
	}
	if got := cacheCounter(t, a, "cairn_cache_misses_total") - misses; got != 0 {
		t.Errorf("cache misses for 5 repeated questions: got %d, want 0", got)
	}

	put(t, a, "/v1/agent/service/register", `{"ID":"web-2","Name":"web","Port":8081}`)
	queryAnswers(t, a, "pq.query.cluster", dns.TypeSRV, dns.RcodeSuccess, 2)
}
