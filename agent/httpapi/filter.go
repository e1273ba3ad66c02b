package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/hashicorp/go-bexpr/grammar"
)

// Bounds on a ?filter expression. go-bexpr's parser (a PEG without
// memoization) backtracks: each level of parentheses multiplies the work
// by three to four, so "((((" takes it about 2 million steps (its own cap,
// some 100 ms) to refuse, and a well-formed expression nested 6 deep takes
// 25-55 ms to accept. So before the parser sees an expression it must be
// short, balanced and shallow (checked in microseconds), and the parser
// is given a budget of steps well under its default.
const (
	// maxFilterBytes bounds an expression's length: 2 KiB holds some 50
	// comparisons.
	maxFilterBytes = 2048
	// maxFilterDepth bounds the nesting of parentheses and collection
	// braces (any ... { }): the deepest nesting that parses within
	// maxFilterSteps whatever fills it.
	maxFilterDepth = 4
	// maxFilterSteps is the parser's budget (go-bexpr's
	// WithMaxExpressions, which counts rule invocations; its default is
	// 2 million): 3-5 ms of CPU. A short expression nested 4 deep takes
	// 45,000-65,000, a 2 KiB one of 36 parenthesized pairs of
	// comparisons about 90,000; deeper nesting around long contents runs
	// out, and is refused as too complex.
	maxFilterSteps = 100_000
)

// filterTypes maps the pattern of each endpoint that applies ?filter to
// the type of the items it filters (what it passes to applyFilter), whose
// field names and types are Consul's: a selector is checked against it
// when the request arrives. A ?filter on any other endpoint is refused
// rather than silently ignored: a client that asked for a subset must not
// take the whole for it.
var filterTypes = map[string]reflect.Type{
	"/v1/catalog/nodes":                reflect.TypeFor[*node](),
	"/v1/catalog/services":             reflect.TypeFor[*catalogService](), // Consul filters the instances, then lists their services
	"/v1/catalog/service/{name}":       reflect.TypeFor[*catalogService](),
	"/v1/catalog/node-services/{node}": reflect.TypeFor[*entryService](),
	"/v1/health/service/{name}":        reflect.TypeFor[*serviceEntry](),
	"/v1/health/checks/{service}":      reflect.TypeFor[*healthCheck](),
	"/v1/health/node/{node}":           reflect.TypeFor[*healthCheck](),
	"/v1/health/state/{state}":         reflect.TypeFor[*healthCheck](),
	"/v1/agent/services":               reflect.TypeFor[*agentService](),
	"/v1/agent/checks":                 reflect.TypeFor[*agentCheck](),
	"/v1/agent/members":                reflect.TypeFor[*agentMember](),
	"/v1/catalog/node/{node}":          reflect.TypeFor[*entryService](), // the node's services, as Consul's
}

// filterKey is the context key of a request's parsed ?filter.
type filterKey struct{}

// withFilter checks the request's ?filter, if any, before the endpoint of
// pattern reads anything (a blocking read could otherwise wait minutes
// before failing), and returns the request carrying it compiled, for
// applyFilter. A ?filter on an endpoint that does not filter, or one
// that is too long, too deep, unbalanced, too costly to parse, that does
// not parse or that selects a field the endpoint's items do not have, is
// a 400 naming "filter".
func withFilter(pattern string, r *http.Request) (*http.Request, error) {
	expr := r.URL.Query().Get("filter")
	if expr == "" {
		return r, nil
	}
	typ, ok := filterTypes[pattern]
	if !ok {
		return r, badRequest("filter", "is not supported by %s", pattern)
	}
	f, err := parseFilter(expr, typ)
	if err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), filterKey{}, f)), nil
}

// hasFilter reports whether the request carries a ?filter.
func hasFilter(r *http.Request) bool {
	_, ok := r.Context().Value(filterKey{}).(*filterExpr)
	return ok
}

// parseFilter parses expr within the bounds above and compiles it for
// items of type typ (filter_eval.go).
func parseFilter(expr string, typ reflect.Type) (*filterExpr, error) {
	if len(expr) > maxFilterBytes {
		return nil, badRequest("filter", "must be at most %d bytes, got %d", maxFilterBytes, len(expr))
	}
	if reason := checkNesting(expr); reason != "" {
		return nil, badRequest("filter", "%s", reason)
	}
	ast, err := grammar.Parse("", []byte(slashLiterals(expr)), grammar.MaxExpressions(maxFilterSteps))
	if err != nil {
		// go-bexpr does not export the error of a spent budget.
		if strings.Contains(err.Error(), "max number of expressions parsed") {
			return nil, badRequest("filter", "is too complex to parse (more than %d parser steps): use fewer parentheses or comparisons", maxFilterSteps)
		}
		return nil, badRequest("filter", "%s", oneLine(err.Error()))
	}
	f, err := compileFilter(ast.(grammar.Expression), typ)
	if err != nil {
		return nil, badRequest("filter", "%s", oneLine(err.Error()))
	}
	return f, nil
}

// slashLiterals rewrites each double-quoted literal that starts with a
// slash ("/metrics") as a raw one (`/metrics`). go-bexpr reads the former
// as a JSON pointer, which as a value compares as the pointer's parts
// joined without the leading slash ("metrics"), so
// `ServiceMeta.metrics_path == "/metrics"` never matched; Consul's
// go-bexpr has no JSON pointers and compares "/metrics". So, as in
// Consul, a selector is a dotted name, never a quoted JSON pointer. A
// literal holding a backslash (an escape) or a backquote is left alone.
func slashLiterals(expr string) string {
	var b []byte // the rewritten expression, once something is rewritten
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if c != '"' && c != '`' {
			continue
		}
		end := strings.IndexByte(expr[i+1:], c)
		if end < 0 {
			break // unterminated: the parser reports it
		}
		end += i + 1
		if lit := expr[i+1 : end]; c == '"' && strings.HasPrefix(lit, "/") && !strings.ContainsAny(lit, "\\`") {
			if b == nil {
				b = []byte(expr)
			}
			b[i], b[end] = '`', '`'
		}
		i = end
	}
	if b == nil {
		return expr
	}
	return string(b)
}

// checkNesting returns why expr's parentheses and braces are unbalanced,
// mismatched or nested deeper than maxFilterDepth, or "" when they are
// not. Those in string literals ("..." and `...`, which the grammar ends
// at the first closing quote, without escapes) do not count. An
// unterminated literal is left to the parser to report.
func checkNesting(expr string) string {
	var open [maxFilterDepth]byte // the closers expected, innermost last
	depth := 0
	var quote byte // the quote of the literal being read, or 0
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '`':
			quote = c
		case c == '(' || c == '{':
			if depth == maxFilterDepth {
				return "nests parentheses and braces more than " + strconv.Itoa(maxFilterDepth) + " deep"
			}
			open[depth] = ')'
			if c == '{' {
				open[depth] = '}'
			}
			depth++
		case c == ')' || c == '}':
			if depth == 0 || open[depth-1] != c {
				return "has an unmatched " + string(c) + " at byte " + strconv.Itoa(i)
			}
			depth--
		}
	}
	if depth > 0 && quote == 0 {
		return "has an unclosed " + string(closerOf(open[depth-1]))
	}
	return ""
}

// closerOf returns the opening bracket of closer.
func closerOf(closer byte) byte {
	if closer == '}' {
		return '{'
	}
	return '('
}

// applyFilter keeps the items that the request's ?filter expression (in
// Consul's filter language, go-bexpr's) matches; without one it returns
// items unchanged. Selectors are the field names of the items, as
// Consul's: Service.Tags, Node.Node, Checks.Status, ServiceMeta.version,
// ... The expression was compiled by withFilter for the type filterTypes
// gives the endpoint, which must be T. An item the expression cannot be
// evaluated on (a comparison of a number with a word, ...) is a 400
// naming "filter".
func applyFilter[T any](r *http.Request, items []T) ([]T, error) {
	f, _ := r.Context().Value(filterKey{}).(*filterExpr)
	if f == nil {
		return items, nil
	}
	if t := reflect.TypeFor[T](); t != f.typ {
		return nil, fmt.Errorf("filter compiled for %s applied to %s", f.typ, t)
	}
	kept := items[:0:0]
	for _, it := range items {
		ok, err := f.match(it)
		if err != nil {
			return nil, badRequest("filter", "%s", oneLine(err.Error()))
		}
		if ok {
			kept = append(kept, it)
		}
	}
	return kept, nil
}
