package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// serviceInstances reads the instances of the request's {name} carrying
// every ?tag (repeated: all must match, case-insensitively, as DNS matches
// them): from the agent's cache when the request says ?cached and there is
// one, with the X-Cache (HIT or MISS) and Age (seconds) headers Consul
// sends; from the catalog otherwise, with the request's query options.
func (s *Server) serviceInstances(w http.ResponseWriter, r *http.Request) ([]catalog.ServiceInstance, rpc.QueryMeta, error) {
	name, tags := r.PathValue("name"), r.URL.Query()["tag"]
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, rpc.QueryMeta{}, err
	}
	var first string
	if len(tags) > 0 {
		first = tags[0]
	}
	near := s.near(r) // coordinate_endpoints.go
	var insts []catalog.ServiceInstance
	var meta rpc.QueryMeta
	// ?near is sorted by the servers, which hold the coordinates: a
	// ?cached read that asks for it goes to them too.
	if s.deps.CachedInstances != nil && r.URL.Query().Has("cached") && near == "" {
		insts, meta, err = s.cachedInstances(w, r, name, first)
	} else {
		// The servers answer the instances (only those with the tag,
		// when one is given), sorted by node then service ID.
		var reply rpc.ServiceInstancesResponse
		args := &rpc.ServiceInstancesRequest{QueryOptions: opts, Service: name, Tag: first, Near: near}
		err = s.door.RPC(r.Context(), rpc.MethodCatalogServiceInstances, args, &reply)
		insts, meta = reply.Instances, reply.QueryMeta
	}
	if err != nil || len(tags) < 2 {
		return insts, meta, err
	}
	kept := insts[:0:0]
	for _, in := range insts {
		if hasAllTags(in.Service, tags[1:]) {
			kept = append(kept, in)
		}
	}
	return kept, meta, nil
}

func hasAllTags(svc *catalog.Service, tags []string) bool {
	for _, t := range tags {
		if !svc.HasTag(t) {
			return false
		}
	}
	return true
}

// cachedInstances answers a ?cached read from the agent's cache. The cache
// answers at once: ?index and ?wait do not block it.
func (s *Server) cachedInstances(w http.ResponseWriter, r *http.Request, name, tag string) ([]catalog.ServiceInstance, rpc.QueryMeta, error) {
	// The cache holds names as DNS asks for them: valid labels, lowercase.
	if reason := catalog.ValidLabel(name); reason != "" {
		return nil, rpc.QueryMeta{}, badRequest("name", "%s", reason)
	}
	if tag != "" {
		if reason := catalog.ValidLabel(tag); reason != "" {
			return nil, rpc.QueryMeta{}, badRequest("tag", "%s", reason)
		}
	}
	idx, insts, hit, age, err := s.deps.CachedInstances(r.Context(), strings.ToLower(name), strings.ToLower(tag))
	if err != nil {
		return nil, rpc.QueryMeta{}, err
	}
	if hit {
		w.Header().Set("X-Cache", "HIT")
	} else {
		w.Header().Set("X-Cache", "MISS")
	}
	w.Header().Set("Age", strconv.Itoa(int(age/time.Second)))
	// A leader that cannot be asked for is not known; the answer, from the
	// cache, stands all the same.
	leader, _ := s.leader(r.Context(), "")
	return insts, rpc.QueryMeta{Index: idx, KnownLeader: leader != "", LastContact: age}, nil
}
