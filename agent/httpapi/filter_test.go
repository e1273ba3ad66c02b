package httpapi_test

import (
	"net/http"
	"net/url"
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
// it.
func TestFilterUnsupported(t *testing.T) {
	h := newServer(t, nil, &fakeCatalog{index: 1})
	filter := "?filter=" + url.QueryEscape(`Node == "x"`)
	for _, target := range []string{
		"/v1/catalog/nodes", "/v1/catalog/service/web", "/v1/catalog/node-services/n1",
		"/v1/health/service/web", "/v1/health/checks/web", "/v1/health/node/n1", "/v1/health/state/any",
	} {
		if rec := serve(h, http.MethodGet, target+filter, ""); rec.Code != http.StatusOK {
			t.Errorf("%s: got %d %s, want 200", target, rec.Code, rec.Body)
		}
	}
	for _, target := range []string{"/v1/agent/services", "/v1/agent/checks", "/v1/catalog/services", "/v1/agent/members"} {
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
