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
// must wait (for a cache miss) should give up when it does.
type Source interface {
	// Instances returns the instances of service in datacenter dc, only
	// those carrying tag when tag != "", split by health: healthy ones are
	// answered; unhealthy ones (a critical or maintenance check, or a
	// warning when only passing instances count) are left out, and used
	// only as Config.UnhealthyAnswer says when none is healthy. Both empty
	// means no such service. service, tag and dc are lowercase.
	Instances(ctx context.Context, dc, service, tag string) (healthy, unhealthy []catalog.ServiceInstance, err error)
	// Node returns the named node of datacenter dc, or (nil, nil) when
	// there is none. name and dc are lowercase.
	Node(ctx context.Context, dc, name string) (*catalog.Node, error)
	// Reverse returns the names of the local datacenter's nodes registered
	// at addr and of the services registered with addr as their own
	// address, for PTR answers; both empty when nothing holds addr.
	Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error)
}
