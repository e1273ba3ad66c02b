package httpapi

import (
	"net/http"

	"github.com/hashicorp/go-bexpr"
)

// maxFilterBytes bounds the length of a ?filter expression, so that one
// request cannot make the agent parse and evaluate an arbitrarily large one
// against every entry. (go-bexpr's WithMaxExpressions counts parser rule
// invocations, a few dozen for one comparison, so a length is the clearer
// bound.)
const maxFilterBytes = 4096

// applyFilter keeps the items that the request's ?filter expression (in
// Consul's filter language, go-bexpr's) matches; without one it returns
// items unchanged. Selectors are the JSON field names of the items, as
// Consul's: Service.Tags, Node.Node, Checks, ServiceMeta.version, ...
// An expression that does not parse, or that names a field the items do
// not have, is a 400 naming "filter".
func applyFilter[T any](r *http.Request, items []T) ([]T, error) {
	expr := r.URL.Query().Get("filter")
	if expr == "" {
		return items, nil
	}
	if len(expr) > maxFilterBytes {
		return nil, badRequest("filter", "must be at most %d bytes, got %d", maxFilterBytes, len(expr))
	}
	eval, err := bexpr.CreateEvaluator(expr)
	if err != nil {
		return nil, badRequest("filter", "%s", oneLine(err.Error()))
	}
	kept := items[:0:0]
	for _, it := range items {
		ok, err := eval.Evaluate(it)
		if err != nil {
			return nil, badRequest("filter", "%s", oneLine(err.Error()))
		}
		if ok {
			kept = append(kept, it)
		}
	}
	return kept, nil
}
