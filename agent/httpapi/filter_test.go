package httpapi_test

import (
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cairndns/cairn/catalog"
)

// filterCatalog returns a catalog of n nodes, node0 to node<n-1>.
func filterCatalog(n int) *fakeCatalog {
	cat := &fakeCatalog{index: 7}
	for i := range n {
		cat.nodes = append(cat.nodes, &catalog.Node{Node: "node" + strconv.Itoa(i), Address: "10.0.0." + strconv.Itoa(i+1), Datacenter: "dc1"})
	}
	return cat
}

// nested returns expr inside depth pairs of parentheses.
func nested(depth int, expr string) string {
	return strings.Repeat("(", depth) + expr + strings.Repeat(")", depth)
}

// filterBenchCases are the expressions BenchmarkFilter times: what a client
// sends, and what an attacker sends.
var filterBenchCases = []struct{ name, expr string }{
	{"simple", `Node == "node3"`},
	{"flat-or", strings.Repeat(`Node == "node3" or `, 20) + `Address == "10.0.0.1"`},
	{"nested-4", nested(4, `Node == "node3"`)},
	{"unbalanced-4", "(((("},
	{"unbalanced-64", strings.Repeat("(", 64)},
	{"nested-6", nested(6, `Node == "node3"`)},
	{"long-4096", strings.Repeat("(", 4096)},
	// The costliest shapes within the bounds: deep nesting around long
	// contents, and many nested groups side by side.
	{"nested-4-long", nested(4, strings.Repeat(`Node == "node3" and `, 20)+`Address == "x"`)},
	{"nested-4-many", strings.Repeat(nested(4, `Node == "node3"`)+" or ", 40) + `Address == "x"`},
}

// BenchmarkFilter times a GET /v1/catalog/nodes over 10 nodes with each
// ?filter of filterBenchCases, whatever the answer (200 or 400).
func BenchmarkFilter(b *testing.B) {
	h := newServer(b, nil, filterCatalog(10))
	for _, bc := range filterBenchCases {
		b.Run(bc.name, func(b *testing.B) {
			target := "/v1/catalog/nodes?filter=" + url.QueryEscape(bc.expr)
			b.ReportAllocs()
			for b.Loop() {
				serve(h, http.MethodGet, target, "")
			}
		})
	}
}

// TestFilterBounds: an expression too long, unbalanced, nested too deep
// or too costly to parse is refused with a 400 naming filter and why,
// before the parser spends its time on it; what clients send passes.
func TestFilterBounds(t *testing.T) {
	h := newServer(t, nil, filterCatalog(10))
	for _, tc := range []struct {
		name, expr string
		want       string // a substring of the reason; "" for a 200
	}{
		{"simple", `Node == "node3"`, ""},
		{"nested 4 deep", nested(4, `Node == "node3"`), ""},
		{"parentheses in a string", `Node == "((((" or Node == ")"`, ""},
		{"parentheses in a raw string", "Node == `((((`", ""},
		{"2 KiB of comparisons", strings.Repeat(`(Node == "node3" and Address != "x") or `, 48) + `Node == "a"`, ""},
		{"too long", `Node == "` + strings.Repeat("x", 2048) + `"`, "at most 2048 bytes"},
		{"unclosed", "((((", "unclosed ("},
		{"unclosed after a comparison", `(Node == "x"`, "unclosed ("},
		{"unmatched", `Node == "x")`, "unmatched )"},
		{"mismatched", `(Node == "x"}`, "unmatched }"},
		{"too deep", nested(5, `Node == "node3"`), "more than 4 deep"},
		{"too deep, braces", `any Checks as c { ((((c.Status == "x")))) }`, "more than 4 deep"},
		{"too costly", nested(4, strings.Repeat(`Node == "node3" and `, 20)+`Address == "x"`), "too complex"},
		{"does not parse", `Node ===`, "1:"},
		{"unterminated string", `Node == "x`, "Unterminated"},
	} {
		rec := serve(h, http.MethodGet, "/v1/catalog/nodes?filter="+url.QueryEscape(tc.expr), "")
		if tc.want == "" {
			if rec.Code != http.StatusOK {
				t.Errorf("%s: got %d %s, want 200", tc.name, rec.Code, rec.Body)
			}
			continue
		}
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: got %d %s, want 400", tc.name, rec.Code, rec.Body)
			continue
		}
		body := errorBody(t, rec)
		if body["field"] != "filter" || !strings.Contains(body["reason"].(string), tc.want) {
			t.Errorf("%s: got %v, want field filter and a reason with %q", tc.name, body, tc.want)
		}
	}
}

// TestFilterUnsupported: ?filter on an endpoint that does not filter is a
// 400, not a silently unfiltered answer; every endpoint that filters takes
// it, with the selectors of its items.
func TestFilterUnsupported(t *testing.T) {
	h := newServer(t, &fakeLocal{}, &fakeCatalog{index: 1})
	filter := "?filter=" + url.QueryEscape(`Node == "x"`)
	for target, expr := range map[string]string{
		"/v1/catalog/nodes":            `Node == "x"`,
		"/v1/catalog/services":         `Node == "x"`,
		"/v1/catalog/service/web":      `Node == "x"`,
		"/v1/catalog/node-services/n1": `Service == "x"`,
		"/v1/health/service/web":       `Node.Node == "x"`,
		"/v1/health/checks/web":        `Node == "x"`,
		"/v1/health/node/n1":           `Node == "x"`,
		"/v1/health/state/any":         `Node == "x"`,
		"/v1/agent/services":           `Service == "x"`,
		"/v1/agent/checks":             `Status == "passing"`,
		"/v1/agent/members":            `Tags.dc == "dc1"`,
		"/v1/catalog/node/n1":          `Service == "x"`,
	} {
		if rec := serve(h, http.MethodGet, target+"?filter="+url.QueryEscape(expr), ""); rec.Code != http.StatusOK {
			t.Errorf("%s: got %d %s, want 200", target, rec.Code, rec.Body)
		}
	}
	for _, target := range []string{"/v1/status/peers"} {
		rec := serve(h, http.MethodGet, target+filter, "")
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: got %d %s, want 400", target, rec.Code, rec.Body)
			continue
		}
		if body := errorBody(t, rec); body["field"] != "filter" || !strings.Contains(body["reason"].(string), "not supported") {
			t.Errorf("%s: got %v, want field filter, not supported", target, body)
		}
		// An empty ?filter is no filter.
		if rec := serve(h, http.MethodGet, target+"?filter=", ""); rec.Code != http.StatusOK {
			t.Errorf("%s?filter=: got %d %s, want 200", target, rec.Code, rec.Body)
		}
	}
}

// TestFilterConsulSelectors: every selector Consul documents for the
// endpoints Prometheus' consul_sd reads is accepted with Consul's types,
// and a selector through the list of checks holds when it holds for any
// check (Consul's go-bexpr), so `Checks.Status == "passing"` is not read
// as an index into the list.
func TestFilterConsulSelectors(t *testing.T) {
	h := newServer(t, nil, testCatalog())
	for _, tc := range []struct {
		target, expr string
		want         []string // Service.ID / ServiceID of the answer, in order
	}{
		{"/v1/health/service/web", `Checks.Status == "passing"`, []string{"web-1"}},
		{"/v1/health/service/web", `Checks.Status != "passing"`, []string{"web-2", "web-3"}},
		{"/v1/health/service/web", `Checks.Status matches "^(warning|critical)$"`, []string{"web-2", "web-3"}},
		{"/v1/health/service/web", `not Checks.Status == "critical"`, []string{"web-1", "web-2"}},
		{"/v1/health/service/web", `Checks.CheckID == "serfHealth"`, []string{"web-2"}},
		{"/v1/health/service/web", `Checks.Name contains "web-3"`, []string{"web-3"}},
		{"/v1/health/service/web", `Checks.ServiceName == "web" and Checks.Output == "out web-1-http"`, []string{"web-1"}},
		{"/v1/health/service/web", `"primary" in Checks.ServiceTags`, []string{"web-1"}},
		{"/v1/health/service/web", `Checks is empty`, []string{}},
		{"/v1/health/service/web", `Checks.0.Status == "warning"`, []string{"web-2"}},
		{"/v1/health/service/web", `Checks.Notes == "notes" and Checks.Node == "n3"`, []string{"web-3"}},
		{"/v1/health/service/web", `any Checks as c { c.Status == "critical" }`, []string{"web-3"}},
		{"/v1/health/service/web", `all Checks as c { c.Status != "critical" }`, []string{"web-1", "web-2"}},
		{"/v1/health/service/web", `Node.Node == "n2" or Node.Datacenter == "dc2"`, []string{"web-2", "web-3"}},
		{"/v1/health/service/web", `Node.Meta.rack == "a" and Node.Address == "10.0.0.1" and Node.ID == "id-1"`, []string{"web-1"}},
		{"/v1/health/service/web", `Node.TaggedAddresses is empty and Node.TaggedAddresses.wan != "x"`, []string{"web-1", "web-2", "web-3"}},
		{"/v1/health/service/web", `Service.Port == 8080 and Service.Weights.Passing == 10`, []string{"web-1"}},
		{"/v1/health/service/web", `Service.Meta.version == "1" and Service.Address == "10.1.0.1"`, []string{"web-1"}},
		{"/v1/health/service/web", `"v1" in Service.Tags and Service.Service == "web" and Service.ID != "web-2"`, []string{"web-1"}},
		{"/v1/health/service/web", `Service.Kind == "" and Service.EnableTagOverride == false and Service.TaggedAddresses is empty`, []string{"web-1", "web-2", "web-3"}},
		{"/v1/catalog/service/web", `ServiceTags contains "v1" and ServicePort == 8080`, []string{"web-1", "web-2"}},
		{"/v1/catalog/service/web", `NodeMeta.rack == "a" or Datacenter == "dc2"`, []string{"web-1", "web-3"}},
		{"/v1/catalog/service/web", `Node matches "n[23]" and Address != "10.0.0.2"`, []string{"web-3"}},
		{"/v1/catalog/service/web", `ServiceMeta.version == "1" and ServiceAddress == "10.1.0.1" and ServiceName == "web" and ServiceID == "web-1"`, []string{"web-1"}},
		{"/v1/catalog/service/web", `TaggedAddresses is empty and ServiceTaggedAddresses is empty and ServiceTaggedAddresses.lan.Port != 1`, []string{"web-1", "web-2", "web-3"}},
		{"/v1/catalog/service/web", `ServiceKind == "" and ServiceEnableTagOverride == false and ServiceWeights.Warning == 1 and ID == "id-1"`, []string{"web-1"}},
	} {
		rec := serve(h, http.MethodGet, tc.target+"?filter="+url.QueryEscape(tc.expr), "")
		if rec.Code != http.StatusOK {
			t.Errorf("%s %s: got %d %s, want 200", tc.target, tc.expr, rec.Code, rec.Body)
			continue
		}
		got := []string{}
		for _, e := range decode[[]map[string]any](t, rec) {
			switch {
			case e["Service"] != nil:
				got = append(got, e["Service"].(map[string]any)["ID"].(string))
			default:
				got = append(got, e["ServiceID"].(string))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: got %v, want %v", tc.target, tc.expr, got, tc.want)
		}
	}
}

// TestFilterUnknownSelector: a selector the endpoint's items do not have
// is a 400 naming it, even when there is nothing to filter; so is a name
// after a list of strings.
func TestFilterUnknownSelector(t *testing.T) {
	h := newServer(t, nil, &fakeCatalog{index: 1})
	for _, tc := range []struct{ target, expr, want string }{
		{"/v1/health/service/web", `Checks.Nope == "x"`, `no field "Nope"`},
		{"/v1/health/service/web", `Service.Tags.x == "x"`, `"x" is not an index`},
		{"/v1/catalog/services", `Nope == "x"`, `no field "Nope"`},
		{"/v1/catalog/node-services/n1", `Node == "x"`, `no field "Node"`},
		{"/v1/health/service/web", `any Service.Port as p { p == 1 }`, `is not a list or a map`},
		{"/v1/health/service/web", `any Checks as i, c { i.Status == "x" }`, `is an index or a key`},
	} {
		rec := serve(h, http.MethodGet, tc.target+"?filter="+url.QueryEscape(tc.expr), "")
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s %s: got %d %s, want 400", tc.target, tc.expr, rec.Code, rec.Body)
			continue
		}
		if body := errorBody(t, rec); body["field"] != "filter" || !strings.Contains(body["reason"].(string), tc.want) {
			t.Errorf("%s %s: got %v, want field filter and a reason with %q", tc.target, tc.expr, body, tc.want)
		}
	}
}

// TestCatalogServicesFilter: ?filter on the list of services selects
// among the instances, as Consul's: the services with an instance
// selected, with the selected instances' tags; a filter that does not
// parse is a 400, not everything.
func TestCatalogServicesFilter(t *testing.T) {
	h := newServer(t, nil, testCatalog())
	for _, tc := range []struct {
		expr string
		want map[string]any
	}{
		{`ServiceName == "web"`, map[string]any{"web": []any{"primary", "v1"}}},
		{`Node == "n2"`, map[string]any{"web": []any{"v1"}}},
		{`NodeMeta.rack == "a"`, map[string]any{"web": []any{"primary", "v1"}, "db": []any{}}},
		{`ServicePort == 5432 or "primary" in ServiceTags`, map[string]any{"web": []any{"primary", "v1"}, "db": []any{}}},
		{`ServiceTags is empty`, map[string]any{"web": []any{}, "db": []any{}}},
		{`Datacenter == "dc9"`, map[string]any{}},
	} {
		rec := serve(h, http.MethodGet, "/v1/catalog/services?filter="+url.QueryEscape(tc.expr), "")
		wantStatus(t, rec, http.StatusOK)
		wantIndex(t, rec, "42")
		if got := decode[map[string]any](t, rec); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %s, want %v", tc.expr, rec.Body, tc.want)
		}
	}
	rec := serve(h, http.MethodGet, "/v1/catalog/services?filter="+url.QueryEscape("garbage((("), "")
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("garbage: got %d %s, want 400", rec.Code, rec.Body)
	}
}

// TestFilterSlashValue: a double-quoted value starting with a slash is the
// string it reads, as in Consul, not a JSON pointer go-bexpr would compare
// without its leading slash.
func TestFilterSlashValue(t *testing.T) {
	cat := filterCatalog(2)
	cat.nodes[0].Meta = map[string]string{"metrics_path": "/metrics"}
	cat.nodes[1].Meta = map[string]string{"metrics_path": "metrics"}
	h := newServer(t, nil, cat)
	for expr, want := range map[string][]string{
		`Meta.metrics_path == "/metrics"`:     {"node0"},
		`Meta.metrics_path == "metrics"`:      {"node1"},
		"Meta.metrics_path == `/metrics`":     {"node0"},
		`"/met" in Meta.metrics_path`:         {"node0"},
		`Meta.metrics_path matches "^/m.*s$"`: {"node0"},
		`Meta.metrics_path != "/x\n"`:         {"node0", "node1"},
	} {
		rec := serve(h, http.MethodGet, "/v1/catalog/nodes?filter="+url.QueryEscape(expr), "")
		wantStatus(t, rec, http.StatusOK)
		got := []string{}
		for _, n := range decode[[]map[string]any](t, rec) {
			got = append(got, n["Node"].(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", expr, got, want)
		}
	}
}

// TestFilterMembersAndNode: ?filter selects among the members of GET
// /v1/agent/members (Consul's `consul members -filter`, with an unquoted
// value as Consul's tests write it) and among the services of GET
// /v1/catalog/node/<node>, as Consul's.
func TestFilterMembersAndNode(t *testing.T) {
	h := newClusterServer(t, testCluster())
	for expr, want := range map[string][]string{
		`Tags["dc"] == dc2`:                   {"odd"},
		`Tags.role == "node" and Status == 4`: {"web-3"},
		`Name matches "^web-[12]$"`:           {"web-1", "web-2"},
		`Tags["dc"] == "not-Exist"`:           {},
	} {
		rec := serve(h, http.MethodGet, "/v1/agent/members?filter="+url.QueryEscape(expr), "")
		wantStatus(t, rec, http.StatusOK)
		got := []string{}
		for _, m := range decode[[]map[string]any](t, rec) {
			got = append(got, m["Name"].(string))
		}
		if !slices.Equal(got, want) {
			t.Errorf("members %s: got %v, want %v", expr, got, want)
		}
	}
	h = newServer(t, nil, testCatalog())
	for expr, want := range map[string][]string{
		`Service == "db"`:   {"db"},
		`Port == 8080`:      {"web-1"},
		`Service == "nope"`: {},
	} {
		rec := serve(h, http.MethodGet, "/v1/catalog/node/n1?filter="+url.QueryEscape(expr), "")
		wantStatus(t, rec, http.StatusOK)
		got := slices.Sorted(maps.Keys(decode[struct{ Services map[string]any }](t, rec).Services))
		if !slices.Equal(got, want) {
			t.Errorf("node %s: got %v, want %v", expr, got, want)
		}
	}
}
