package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// CachedCatalog is a Catalog that can also answer service reads from the
// agent's cache, for Consul's ?cached parameter: the answer may trail the
// servers by the moment a change takes to reach the cache, costs no RPC
// when the entry is there, and says how old it is.
type CachedCatalog interface {
	// CachedServiceInstances returns name's instances (every one, sorted
	// by node then service ID) from the cache: hit reports whether the
	// entry was there, age how long it has gone without being confirmed by
	// a server (0 while the cache is in contact).
	CachedServiceInstances(ctx context.Context, name, tag string) (index uint64, insts []catalog.ServiceInstance, hit bool, age time.Duration, err error)
}

// serviceInstances reads the instances of the request's {name} carrying
// every ?tag (repeated: all must match, case-insensitively, as DNS matches
// them): from the agent's cache when the request says ?cached and there is
// one, with the X-Cache (HIT or MISS) and Age (seconds) headers Consul
// sends; from the catalog otherwise, with the request's query options.
func (s *Server) serviceInstances(w http.ResponseWriter, r *http.Request) ([]catalog.ServiceInstance, QueryMeta, error) {
	name, tags := r.PathValue("name"), r.URL.Query()["tag"]
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, QueryMeta{}, err
	}
	var first string
	if len(tags) > 0 {
		first = tags[0]
	}
	opts.Near = s.resolveNear(opts.Near) // coordinate_endpoints.go
	var insts []catalog.ServiceInstance
	var meta QueryMeta
	// ?near is sorted by the servers, which hold the coordinates: a
	// ?cached read that asks for it goes to them too.
	if cc, ok := s.catalog.(CachedCatalog); ok && r.URL.Query().Has("cached") && opts.Near == "" {
		insts, meta, err = s.cachedInstances(w, r, cc, name, first)
	} else {
		insts, meta, err = s.catalog.ServiceInstances(r.Context(), opts, name, first)
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
func (s *Server) cachedInstances(w http.ResponseWriter, r *http.Request, cc CachedCatalog, name, tag string) ([]catalog.ServiceInstance, QueryMeta, error) {
	// The cache holds names as DNS asks for them: valid labels, lowercase.
	if reason := catalog.ValidLabel(name); reason != "" {
		return nil, QueryMeta{}, badRequest("name", "%s", reason)
	}
	if tag != "" {
		if reason := catalog.ValidLabel(tag); reason != "" {
			return nil, QueryMeta{}, badRequest("tag", "%s", reason)
		}
	}
	idx, insts, hit, age, err := cc.CachedServiceInstances(r.Context(), strings.ToLower(name), strings.ToLower(tag))
	if err != nil {
		return nil, QueryMeta{}, err
	}
	if hit {
		w.Header().Set("X-Cache", "HIT")
	} else {
		w.Header().Set("X-Cache", "MISS")
	}
	w.Header().Set("Age", strconv.Itoa(int(age/time.Second)))
	// A leader that cannot be asked for is not known; the answer, from the
	// cache, stands all the same.
	leader, _ := s.status.Leader(r.Context())
	return insts, QueryMeta{Index: idx, KnownLeader: leader != "", LastContact: age}, nil
}
