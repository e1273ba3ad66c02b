package resolver

import (
	"context"
	"net/netip"

	"github.com/cairndns/cairn/catalog"
)

// Source gives the resolver its data. Implementations answer from memory,
// are safe for concurrent use, and return values that are shared and must
// not be modified.
//
// The resolver calls a Source from the goroutine answering a query, with a
// context that expires after Config.QueryTimeout; an implementation that
// must wait (for a cache miss) should give up when it does. The context
// must not be kept past the call: one no Source waited on (Done) is
// reused for a later question.
type Source interface {
	// Instances returns the instances of service in datacenter dc, only
	// those carrying tag when tag != "", split by health (see Instances).
	// nil, or both halves empty, means no such service. service, tag and
	// dc are lowercase. A Source that answers many questions from one
	// snapshot (a cache) should return the same *Instances for each: the
	// resolver keeps the records it builds beside it.
	Instances(ctx context.Context, dc, service, tag string) (*Instances, error)
	// Node returns the named node of datacenter dc, or (nil, nil) when
	// there is none. name and dc are lowercase.
	Node(ctx context.Context, dc, name string) (*catalog.Node, error)
	// Reverse returns the names of the local datacenter's nodes registered
	// at addr and of the services registered with addr as their own
	// address, for PTR answers; both empty when nothing holds addr.
	Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error)
	// PreparedQuery executes the prepared query of datacenter dc whose
	// name or ID is nameOrID (failing over to other datacenters as the
	// query says) and returns the result, whose Nodes are the healthy
	// instances to answer with; (nil, nil) when there is no such query.
	// nameOrID and dc are lowercase. Unlike the other methods it may cost
	// a round trip to the servers per call.
	PreparedQuery(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error)
}

// Instances is a service's instances split by health: Healthy ones are
// answered; Unhealthy ones (a critical or maintenance check, or a warning
// when only passing instances count) are left out, and used only as
// Config.UnhealthyAnswer says when none is healthy. It must not be
// modified once a Source has returned it.
//
// The resolver memoizes the answers it builds from a set (per zone, query
// type and name asked), so a Source that returns one set for as long as
// its data is unchanged makes every repeated question cost a lookup and a
// shuffle, not a rebuild of its records.
type Instances struct {
	Healthy, Unhealthy []catalog.ServiceInstance
	// Stale marks data the Source could not confirm recently (its servers
	// are unreachable; RFC 8767 serve-stale): answers from it carry a TTL
	// of at most StaleTTL, so resolvers come back soon for fresh data.
	Stale bool
	// Ordered marks instances listed in the order they are to be
	// answered in (nearest first, for the "near" datacenter): answers
	// built from them keep that order rather than being shuffled.
	Ordered bool
	memo    answerMemo
}

// StaleTTL caps the TTL of records answered from stale data, the value RFC
// 8767 suggests.
const StaleTTL = 30

// Staled returns a copy of set marked Stale (nil stays nil). The copy
// shares the instances but not the memo: stale answers are rare and are
// built each time.
func (set *Instances) Staled() *Instances {
	if set == nil {
		return nil
	}
	return &Instances{Healthy: set.Healthy, Unhealthy: set.Unhealthy, Stale: true, Ordered: set.Ordered}
}

// NewInstances returns a set of healthy and unhealthy instances.
func NewInstances(healthy, unhealthy []catalog.ServiceInstance) *Instances {
	return &Instances{Healthy: healthy, Unhealthy: unhealthy}
}
