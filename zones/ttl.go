package zones

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// serviceTTLs is Config.ServiceTTLs prepared for lookups: one map lookup
// for an exact name, then a scan of the (few) prefixes, longest first.
type serviceTTLs struct {
	exact    map[string]uint32 // lowercase service name → TTL
	prefixes []ttlPrefix       // longest first; "*" is the empty prefix, last
}

// ttlPrefix is a key of Config.ServiceTTLs ending in '*'.
type ttlPrefix struct {
	prefix string // lowercase, without the '*'
	ttl    uint32
}

// newServiceTTLs prepares validated Config.ServiceTTLs for lookups.
func newServiceTTLs(m map[string]time.Duration) serviceTTLs {
	var t serviceTTLs
	for key, d := range m {
		key = strings.ToLower(key)
		if prefix, ok := strings.CutSuffix(key, "*"); ok {
			t.prefixes = append(t.prefixes, ttlPrefix{prefix, seconds(d)})
			continue
		}
		if t.exact == nil {
			t.exact = make(map[string]uint32, len(m))
		}
		t.exact[key] = seconds(d)
	}
	// Longest first; equal lengths cannot both match one name unless they
	// are equal, which Validate rules out, so the order among them is moot.
	slices.SortFunc(t.prefixes, func(a, b ttlPrefix) int {
		return cmp.Or(cmp.Compare(len(b.prefix), len(a.prefix)), strings.Compare(a.prefix, b.prefix))
	})
	return t
}

// lookup returns the TTL the most specific key gives to service (lowercase)
// and whether any key matched.
func (t *serviceTTLs) lookup(service string) (uint32, bool) {
	if ttl, ok := t.exact[service]; ok {
		return ttl, true
	}
	for _, p := range t.prefixes {
		if strings.HasPrefix(service, p.prefix) {
			return p.ttl, true
		}
	}
	return 0, false
}

// ttlFor returns the TTL of the records answering for service
// (lowercase): its entry in Config.ServiceTTLs, else Config.ServiceTTL.
func (z *Zone) ttlFor(service string) uint32 {
	if ttl, ok := z.ttls.lookup(service); ok {
		return ttl
	}
	return z.serviceTTL
}
