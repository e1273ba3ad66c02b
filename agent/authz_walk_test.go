package agent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/internal/waittest"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/rpc/rpctest"
)

// Markers of the protected data the walk's fixtures hold: none may show
// in an answer to an attacker.
const (
	markerAddr  = "10.99.88.77"
	markerMeta  = "m4rk3r"
	markerValue = "s3cr3t-v4lue"
)

// protected matches any marker, the stored value also in base64 (the
// fixture's value is JSON: quoted).
var protected = regexp.MustCompile(regexp.QuoteMeta(markerAddr) + "|" + markerMeta + "|" + regexp.QuoteMeta(markerValue) +
	"|" + regexp.QuoteMeta(base64.StdEncoding.EncodeToString([]byte(`"`+markerValue+`"`))))

// attacker is a way of calling without the right to.
type attacker struct {
	name, token string
	known       bool // the servers know the token: filtered reads answer it
}

// TestEveryRouteAndMethodRefusesAnAttacker walks the whole route table of
// the HTTP API and the whole method table of the RPC port of a secured
// server (ACLs on, default deny) with no token, the anonymous token, a
// token for other names, another datacenter's management token and an
// expired management token. Every request is refused (403), or for a read
// that filters, answered without the protected data; a refused request's
// body is never read (the server never asks for it: Expect 100-continue);
// and nothing the management token can see has changed after the walk.
// Routes and methods are taken from the tables the server is built from
// (the routes by way of httpapi/testdata/routes.json, which httpapi's tests
// keep equal to its table), so a new one is walked without touching this
// test.
func TestEveryRouteAndMethodRefusesAnAttacker(t *testing.T) {
	t.Parallel()
	cfg := aclServerConfig(t, "walk1")
	cfg.ACL.TokenMinExpirationTTL = time.Second
	a := agenttest.Start(t, cfg)
	const dc2Secret = "1c3f1e2a-5b6c-4d7e-8f90-a1b2c3d4e5f6"
	cfg2 := agenttest.ServerConfig(t, "walk2", 1)
	cfg2.Datacenter = "dc2"
	cfg2.ACL.Enabled, cfg2.ACL.DefaultPolicy = true, "deny"
	cfg2.ACL.Tokens.InitialManagement, cfg2.ACL.Tokens.Agent = dc2Secret, dc2Secret
	b := agenttest.Start(t, cfg2)
	waitManagement(t, a)
	waittest.For(t, aclTestWait, "dc2's management token", func() error {
		if code, body := call(t, b, dc2Secret, "GET", "/v1/acl/token/self", nil); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})

	fx := makeFixtures(t, a, cfg.NodeName)
	other := makeToken(t, a, "other-names", `
service "other" { policy = "write" }
node "other-node" { policy = "write" }
key_prefix "other/" { policy = "write" }
session "other-node" { policy = "write" }
query "other" { policy = "write" }
agent "other-node" { policy = "write" }
`)
	var expired struct {
		SecretID       string
		ExpirationTime time.Time
	}
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{
		"Policies": []map[string]string{{"Name": "global-management"}}, "ExpirationTTL": "1s",
	}, &expired)
	attackers := []attacker{
		{"no token", "", true},
		{"anonymous", "anonymous", true},
		{"other names", other, true},
		{"dc2's management", dc2Secret, false},
		{"expired management", expired.SecretID, false},
	}
	waittest.For(t, 10*time.Second, "the token to expire", func() error {
		if code, _ := call(t, a, expired.SecretID, "GET", "/v1/acl/token/self", nil); code != http.StatusForbidden {
			return fmt.Errorf("still answered %d", code)
		}
		return nil
	})
	before := dumpState(t, a)

	start := time.Now()
	routes := routeTable(t)
	for _, rt := range routes {
		walkRoute(t, a, fx, rt, attackers)
	}
	methods := agent.RPCMethods(a)
	walkRPC(t, agent.RPCAddr(a), methods, attackers)
	t.Logf("walked %d routes and %d RPC methods with %d attackers in %s", len(routes), len(methods), len(attackers), time.Since(start).Round(time.Millisecond))

	// Nothing changed: the same state, read again after anything a
	// request may have set off had time to land.
	after := dumpState(t, a)
	for what, was := range before {
		if after[what] != was {
			t.Errorf("%s changed during the walk:\nbefore %s\nafter  %s", what, was, after[what])
		}
	}
}

// route is one method of one route of the HTTP API.
type route struct {
	Pattern string // as registered, "/v1/kv/{key...}"
	Method  string
	Need    httpapi.Need
}

// routeTable reads the HTTP API's route table, which httpapi's
// TestRoutesFileIsCurrent keeps written out from the table its mux is
// built from.
func routeTable(t *testing.T) []route {
	t.Helper()
	b, err := os.ReadFile("httpapi/testdata/routes.json")
	if err != nil {
		t.Fatal(err)
	}
	var routes []route
	if err := json.Unmarshal(b, &routes); err != nil {
		t.Fatalf("httpapi/testdata/routes.json: %v", err)
	}
	if len(routes) < 80 {
		t.Fatalf("httpapi/testdata/routes.json: %d routes, want the whole table", len(routes))
	}
	return routes
}

// fixtures are the objects the walk's paths name, so that a refusal is not
// just a 404.
type fixtures struct {
	node, session, query, policy, token, role string
}

func makeFixtures(t *testing.T, a *agent.Agent, node string) fixtures {
	t.Helper()
	fx := fixtures{node: node}
	mustCall(t, a, mgmtSecret, "PUT", "/v1/agent/service/register", map[string]any{
		"ID": "web1", "Name": "web", "Port": 80, "Address": markerAddr, "Meta": map[string]string{"m": markerMeta},
		"Check": map[string]any{"CheckID": "web-ttl", "TTL": "1h"},
	}, nil)
	mustCall(t, a, mgmtSecret, "PUT", "/v1/kv/secret/k", markerValue, nil)
	var sess struct{ ID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/session/create", map[string]any{"Name": "s-" + markerMeta, "Checks": []string{}}, &sess)
	fx.session = sess.ID
	var pq struct{ ID string }
	mustCall(t, a, mgmtSecret, "POST", "/v1/query", map[string]any{"Name": "pq", "Service": map[string]any{"Service": "web"}}, &pq)
	fx.query = pq.ID
	var pol struct{ ID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/policy", map[string]string{"Name": "walk-" + markerMeta, "Rules": `key "x" { policy = "read" }`}, &pol)
	fx.policy = pol.ID
	var tok struct{ AccessorID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/token", map[string]any{"Description": markerMeta, "Policies": []map[string]string{{"ID": pol.ID}}}, &tok)
	fx.token = tok.AccessorID
	var role struct{ ID string }
	mustCall(t, a, mgmtSecret, "PUT", "/v1/acl/role", map[string]any{"Name": "walk-role", "Policies": []map[string]string{{"ID": pol.ID}}}, &role)
	fx.role = role.ID
	// The service's sync reaches the catalog.
	waittest.For(t, aclTestWait, "web in the catalog", func() error {
		if _, ok := serviceNames(t, a)["web"]; !ok {
			return errors.New("not yet")
		}
		return nil
	})
	return fx
}

// path fills rt's pattern with the names of existing objects.
func (fx fixtures) path(pattern string) string {
	ids := []struct{ prefix, id string }{
		{"/v1/agent/service/", "web1"}, {"/v1/agent/health/service/id/", "web1"}, {"/v1/agent/check/", "web-ttl"}, {"/v1/query/", fx.query},
		{"/v1/session/", fx.session}, {"/v1/acl/policy/", fx.policy}, {"/v1/acl/token/", fx.token}, {"/v1/acl/role/", fx.role},
	}
	id := ""
	for _, p := range ids {
		if strings.HasPrefix(pattern, p.prefix) {
			id = p.id
		}
	}
	return strings.NewReplacer(
		"{id...}", id, "{id}", id, "{name}", "web", "{service}", "web", "{node}", fx.node, "{state}", "any",
		"{key...}", "secret/k", "{address...}", "127.0.0.1:1", "{what}", "configuration", "{name...}", "heap",
		"{$}", "",
	).Replace(pattern)
}

// probeBody is what every request offers as its body (probe): the server
// must ask for it (100 Continue) before it is sent; bytes counts what was
// sent.
type probeBody struct {
	r     *bytes.Reader
	bytes *atomic.Int64
}

func (p probeBody) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.bytes.Add(int64(n))
	return n, err
}

func probe(fx fixtures, method, pattern string) []byte {
	// Valid requests against the protected objects where the route
	// takes a body, so that a check after the body is read is tried too.
	bodies := map[string]any{
		"PUT /v1/agent/service/register":           map[string]any{"ID": "web1", "Name": "web", "Port": 81},
		"PUT /v1/agent/check/register":             map[string]any{"CheckID": "web-ttl", "Name": "x", "ServiceID": "web1", "TTL": "1m"},
		"PUT /v1/agent/check/update/{id...}":       map[string]any{"Status": "passing", "Output": "x"},
		"PUT /v1/catalog/register":                 map[string]any{"Node": fx.node, "Address": "192.0.2.1", "Service": map[string]any{"ID": "web1", "Service": "web", "Port": 81}},
		"PUT /v1/catalog/deregister":               map[string]any{"Node": fx.node, "ServiceID": "web1"},
		"POST /v1/query":                           map[string]any{"Name": "pq2", "Service": map[string]any{"Service": "web"}},
		"PUT /v1/query/{id}":                       map[string]any{"Name": "pq", "Service": map[string]any{"Service": "other"}},
		"PUT /v1/txn":                              []any{map[string]any{"KV": map[string]any{"Verb": "set", "Key": "secret/k", "Value": "eA=="}}},
		"PUT /v1/session/create":                   map[string]any{"Node": fx.node, "Checks": []string{}},
		"PUT /v1/coordinate/update":                map[string]any{"Node": fx.node, "Coord": map[string]any{"Vec": []float64{1, 1, 1, 1, 1, 1, 1, 1}, "Error": 1, "Adjustment": 0, "Height": 0.1}},
		"PUT /v1/operator/autopilot/{what}":        map[string]any{"CleanupDeadServers": false},
		"PUT /v1/acl/policy":                       map[string]any{"Name": "evil", "Rules": `operator = "write"`},
		"PUT /v1/acl/policy/{id}":                  map[string]any{"Name": "evil", "Rules": `operator = "write"`},
		"PUT /v1/acl/token":                        map[string]any{"Policies": []map[string]string{{"Name": "global-management"}}},
		"PUT /v1/acl/token/{id}":                   map[string]any{"Policies": []map[string]string{{"Name": "global-management"}}},
		"PUT /v1/agent/service/deregister/{id...}": nil,
		"PUT /v1/acl/role":                         map[string]any{"Name": "evil", "Policies": []map[string]string{{"Name": "global-management"}}},
		"PUT /v1/acl/role/{id}":                    map[string]any{"Name": "walk-role", "Policies": []map[string]string{{"Name": "global-management"}}},
		"PUT /v1/acl/token/{id}/clone":             map[string]any{"Description": "evil"},
	}
	v, ok := bodies[method+" "+pattern]
	if !ok {
		v = map[string]any{"Pad": strings.Repeat("x", 256<<10)}
	}
	body, _ := json.Marshal(v)
	return body
}

var walkClient = &http.Client{
	Timeout: 20 * time.Second,
	// Wait for the server to ask for the body before sending it, long
	// enough that only a server that reads it gets it.
	Transport: &http.Transport{ExpectContinueTimeout: 15 * time.Second},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

func walkRoute(t *testing.T, a *agent.Agent, fx fixtures, rt route, attackers []attacker) {
	t.Helper()
	what := rt.Method + " " + rt.Pattern
	body := probe(fx, rt.Method, rt.Pattern)
	for _, at := range attackers {
		var sent atomic.Int64
		req, err := http.NewRequest(rt.Method, "http://"+a.HTTPAddr().String()+fx.path(rt.Pattern), probeBody{bytes.NewReader(body), &sent})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(body))
		req.Header.Set("Expect", "100-continue")
		if at.token != "" {
			req.Header.Set("X-Consul-Token", at.token)
		}
		resp, err := walkClient.Do(req)
		if err != nil {
			t.Errorf("%s as %s: %v", what, at.name, err)
			continue
		}
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		code := resp.StatusCode
		need := rt.Need
		fail := func(format string, args ...any) {
			t.Errorf("%s as %s: got %d %.300s: %s", what, at.name, code, answer, fmt.Sprintf(format, args...))
		}
		if code >= 500 {
			fail("want no server error")
		}
		if protected.Match(answer) {
			fail("the answer holds protected data")
		}
		switch {
		case need.Level == rpc.LevelPublic:
			continue // its answer is anyone's; the state is compared after
		case need.Filtered && at.known:
			if code != http.StatusOK && code != http.StatusForbidden && code != http.StatusNotFound {
				fail("want 200 without the protected data, 403 or 404")
			}
		case need.From == httpapi.FromRequest && at.name == "other names":
			// Its token holds the right on other names: the body
			// names the object, so it is read, and refused.
			if code/100 != 4 {
				fail("want a refusal")
			}
			continue
		default:
			if code != http.StatusForbidden {
				fail("want 403")
			}
		}
		if n := sent.Load(); n > 0 {
			fail("the server read %d bytes of the body before refusing", n)
		}
	}
}

// walkRPC calls every method of the RPC port as each attacker, with empty
// arguments: those that need a token refuse an unknown one before
// running, those for management tokens refuse every attacker; what the
// others do with a known token, the method decides, and nothing may
// change (compared by the caller).
func walkRPC(t *testing.T, addr string, methods []rpc.MethodInfo, attackers []attacker) {
	t.Helper()
	pool := rpctest.NewPool(t)
	for _, m := range methods {
		for _, at := range attackers {
			args := reflect.New(m.Args.Elem()).Interface()
			if au, ok := args.(rpc.Authenticated); ok {
				au.SetTokenIfEmpty(at.token)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var err error
			if m.Stream {
				var st rpc.Stream
				if st, err = pool.Stream(ctx, addr, m.Name, args); err == nil {
					err = st.Recv(ctx, reflect.New(m.Reply.Elem()).Interface())
					if err == nil && m.Need.Filtered && at.known {
						err = errFilteredOK
					}
					_ = st.Close()
				}
			} else {
				err = pool.Call(ctx, addr, m.Name, args, nil)
			}
			cancel()
			refused := errors.Is(err, rpc.ErrPermissionDenied) || errors.Is(err, rpc.ErrACLNotFound)
			switch {
			case m.Need.Level == rpc.LevelPublic:
			case m.Need.Level == rpc.LevelManagement && !refused:
				t.Errorf("%s as %s: got %v, want permission denied or ACL not found", m.Name, at.name, err)
			case m.Need.Level == rpc.LevelToken && !at.known && !refused:
				t.Errorf("%s as %s: got %v, want ACL not found", m.Name, at.name, err)
			}
		}
	}
}

var errFilteredOK = errors.New("a filtered stream answered")

// dumpState reads, with the management token, everything an attacker's
// request could change, without the indexes and times that move by
// themselves.
func dumpState(t *testing.T, a *agent.Agent) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, path := range []string{
		"/v1/catalog/services", "/v1/catalog/nodes", "/v1/health/state/any", "/v1/kv/?recurse",
		"/v1/session/list", "/v1/query", "/v1/acl/tokens", "/v1/acl/policies", "/v1/acl/roles", "/v1/agent/services",
		"/v1/agent/checks", "/v1/operator/autopilot/configuration", "/v1/status/peers",
	} {
		code, b := call(t, a, mgmtSecret, "GET", path, nil)
		if code != http.StatusOK {
			t.Fatalf("state %s: %d %s", path, code, b)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("state %s: %v", path, err)
		}
		norm, _ := json.Marshal(stripVolatile(v))
		out[path] = string(norm)
	}
	return out
}

var volatile = regexp.MustCompile(`Index$|^LastContact$|^ExpirationTime$`)

func stripVolatile(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if volatile.MatchString(k) {
				delete(v, k)
				continue
			}
			v[k] = stripVolatile(x)
		}
	case []any:
		for i, x := range v {
			v[i] = stripVolatile(x)
		}
	}
	return v
}
