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

// serviceInstances reads the instances of the request's {name} (and
// ?tag): from the agent's cache when the request says ?cached and there
// is one, with the X-Cache (HIT or MISS) and Age (seconds) headers Consul
// sends; from the catalog otherwise.
func (s *Server) serviceInstances(w http.ResponseWriter, r *http.Request) (uint64, []catalog.ServiceInstance, error) {
	name, tag := r.PathValue("name"), r.URL.Query().Get("tag")
	cc, ok := s.catalog.(CachedCatalog)
	if !ok || !r.URL.Query().Has("cached") {
		return s.catalog.ServiceInstances(r.Context(), name, tag)
	}
	// The cache holds names as DNS asks for them: valid labels, lowercase.
	if reason := catalog.ValidLabel(name); reason != "" {
		return 0, nil, badRequest("name", "%s", reason)
	}
	if tag != "" {
		if reason := catalog.ValidLabel(tag); reason != "" {
			return 0, nil, badRequest("tag", "%s", reason)
		}
	}
	idx, insts, hit, age, err := cc.CachedServiceInstances(r.Context(), strings.ToLower(name), strings.ToLower(tag))
	if err != nil {
		return 0, nil, err
	}
	if hit {
		w.Header().Set("X-Cache", "HIT")
	} else {
		w.Header().Set("X-Cache", "MISS")
	}
	w.Header().Set("Age", strconv.Itoa(int(age/time.Second)))
	return idx, insts, nil
}
