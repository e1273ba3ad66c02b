package dnssource

import (
	"time"

	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/resolver"
)

// This file holds the DNS "near" datacenter: <svc>.service.near.<domain>
// (and its tag and RFC 2782 forms) answers the local datacenter's healthy
// instances sorted by the estimated round trip time from this agent,
// nearest first, and the resolver keeps that order instead of shuffling.
//
// The DNS path stays free of RPC and of sorting: a "near" entry is a
// cache entry like any other (its own key, Filter "near"), filled by a
// read that the server sorts (it holds every coordinate), refetched when
// the change feed names its service, and in addition every nearRefresh,
// since coordinates move without the feed saying so (they are left out
// of it on purpose: catalog/coordinates.go).

// nearDatacenter is the datacenter label of "near" names. agent/config
// refuses a datacenter named so.
const nearDatacenter = "near"

// filterNear marks the cache keys of "near" entries.
const filterNear = "near"

// defaultNearRefresh is how often a "near" entry is sorted again while
// the feed names no change to its service: coordinates settle over tens
// of seconds, so a re-sort every 15s follows them closely enough, at the
// cost of one read per "near" name asked for, not one per question.
const defaultNearRefresh = 15 * time.Second

// nearConfig returns cfg for the instances cache: "near" entries are
// refetched every nearRefresh, other entries as cfg says.
func (s *Source) nearConfig(cfg cache.Config) cache.Config {
	other := cfg.RefreshAfter
	cfg.RefreshAfter = func(v any) time.Duration {
		if set, ok := v.(*resolver.Instances); ok && set != nil && set.Ordered {
			return s.nearRefresh
		}
		if other != nil {
			return other(v)
		}
		return 0
	}
	return cfg
}
