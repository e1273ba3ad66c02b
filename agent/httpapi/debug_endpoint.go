package httpapi

import (
	"net/http"
	// The handlers are mounted on the API's own mux (debugPprof) and
	// served only with Config.EnableDebug. Importing the package also
	// registers them on http.DefaultServeMux, which cairn never serves.
	"net/http/pprof"
)

// debugPprof answers /debug/pprof/<name> with Go's runtime profiles (the
// index, cmdline, profile, symbol, trace and the named profiles:
// goroutine, heap, allocs, block, mutex, threadcreate) when the agent runs
// with enable_debug, and 404 otherwise, as for any unknown path. With
// ACLs on it needs operator:read, as Consul's.
func (s *Server) debugPprof(w http.ResponseWriter, r *http.Request) error {
	if !s.cfg.EnableDebug {
		return notFound("no endpoint %s (the agent runs without enable_debug)", r.URL.Path)
	}
	switch r.PathValue("name") {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		// The index, and the named profiles by the path's last element.
		pprof.Index(w, r)
	}
	return nil
}
