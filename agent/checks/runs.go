package checks

import (
	"slices"
	"strings"
	"sync"

	"github.com/cairndns/cairn/catalog"
)

// RunCount is how many probes of one check type gave one status.
type RunCount struct {
	Type   string // TypeHTTP, TypeTCP, ...
	Status catalog.HealthStatus
	Count  uint64
}

// runCounts counts probe results by check type and status, for metrics.
// A probe runs every few seconds per check, so a mutex is cheap enough.
type runCounts struct {
	mu sync.Mutex
	n  map[runKey]uint64
}

type runKey struct {
	typ    string
	status catalog.HealthStatus
}

func (r *runCounts) add(typ string, status catalog.HealthStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = make(map[runKey]uint64)
	}
	r.n[runKey{typ, status}]++
}

// Runs returns the probes run so far by every check of the Manager, by
// type and status, sorted by type then status. TTL checks, which are told
// their status rather than probing, are not counted.
func (m *Manager) Runs() []RunCount {
	m.runs.mu.Lock()
	out := make([]RunCount, 0, len(m.runs.n))
	for k, n := range m.runs.n {
		out = append(out, RunCount{Type: k.typ, Status: k.status, Count: n})
	}
	m.runs.mu.Unlock()
	slices.SortFunc(out, func(a, b RunCount) int {
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(string(a.Status), string(b.Status))
	})
	return out
}
