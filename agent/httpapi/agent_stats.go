package httpapi

import (
	"runtime"
	"strconv"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/internal/buildinfo"
)

// selfStats is Consul's /v1/agent/self Stats: the agent, build and runtime
// sections, then the agent's own (Deps.Stats).
func (s *Server) selfStats() map[string]map[string]string {
	out := map[string]map[string]string{
		"agent": s.localStats(),
		"build": {"version": buildinfo.Version(), "revision": buildinfo.Revision(), "prerelease": "", "version_metadata": ""},
		"runtime": {
			"arch":       runtime.GOARCH,
			"os":         runtime.GOOS,
			"version":    runtime.Version(),
			"cpu_count":  strconv.Itoa(runtime.NumCPU()),
			"max_procs":  strconv.Itoa(runtime.GOMAXPROCS(0)),
			"goroutines": strconv.Itoa(runtime.NumGoroutine()),
		},
	}
	if s.deps.Stats != nil {
		for name, section := range s.deps.Stats() {
			out[name] = section
		}
	}
	return out
}

// localStats counts the agent's own services and checks.
func (s *Server) localStats() map[string]string {
	var ttls, monitors int
	cs := s.local.Checks()
	for _, c := range cs {
		switch c.Type {
		case checks.TypeTTL:
			ttls++
		case checks.TypeScript:
			monitors++
		}
	}
	return map[string]string{
		"services": strconv.Itoa(len(s.local.Services())), "checks": strconv.Itoa(len(cs)),
		"check_ttls": strconv.Itoa(ttls), "check_monitors": strconv.Itoa(monitors),
	}
}
