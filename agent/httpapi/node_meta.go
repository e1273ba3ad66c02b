package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// ?node-meta=key:value keeps only what is on nodes whose metadata holds
// every pair given, as Consul's. The endpoints that take it (Consul's
// list): /v1/catalog/nodes, /v1/catalog/services,
// /v1/catalog/service/<s>, /v1/health/service/<s>, /v1/health/checks/<s>
// and /v1/health/state/<state>. A value without a colon asks for the key
// with an empty value, as Consul's parser reads it.

// nodeMetaFilter returns the request's ?node-meta pairs, nil when none.
func nodeMetaFilter(r *http.Request) map[string]string {
	vals := r.URL.Query()["node-meta"]
	if len(vals) == 0 {
		return nil
	}
	want := make(map[string]string, len(vals))
	for _, v := range vals {
		k, val, _ := strings.Cut(v, ":")
		want[k] = val
	}
	return want
}

// metaMatches reports whether meta holds every pair of want.
func metaMatches(meta, want map[string]string) bool {
	for k, v := range want {
		if got, ok := meta[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// keepOnNodes keeps the items whose node (node(item)) matches want.
func keepOnNodes[T any](items []T, want map[string]string, node func(T) *catalog.Node) []T {
	if want == nil {
		return items
	}
	kept := items[:0:0]
	for _, it := range items {
		if n := node(it); n != nil && metaMatches(n.Meta, want) {
			kept = append(kept, it)
		}
	}
	return kept
}

func instanceNode(in catalog.ServiceInstance) *catalog.Node { return in.Node }

// checksOnNodes keeps the checks on nodes matching want. Checks do not
// carry their node's metadata: the nodes are read, without blocking, once
// the checks are in hand.
func (s *Server) checksOnNodes(ctx context.Context, opts rpc.QueryOptions, checks []*catalog.Check, want map[string]string) ([]*catalog.Check, error) {
	if want == nil {
		return checks, nil
	}
	opts.MinQueryIndex, opts.MaxQueryTime = 0, 0
	var reply rpc.NodesResponse
	if err := s.door.RPC(ctx, rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: opts}, &reply); err != nil {
		return nil, err
	}
	matching := make(map[string]bool, len(reply.Nodes))
	for _, n := range reply.Nodes {
		if metaMatches(n.Meta, want) {
			matching[strings.ToLower(n.Node)] = true
		}
	}
	kept := checks[:0:0]
	for _, c := range checks {
		if matching[strings.ToLower(c.Node)] {
			kept = append(kept, c)
		}
	}
	return kept, nil
}
