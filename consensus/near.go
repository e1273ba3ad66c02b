package consensus

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// This file sorts answers by network distance: ?near on the catalog and
// health reads, prepared queries' Service.Near, and Failover.NearestN's
// choice of datacenters. The server holds every node's coordinate, so it
// sorts; agents only name the node to measure from.

// sortNear sorts items by the estimated round trip time from node near,
// nearest first; items whose node has no coordinate come last. A near
// node without a coordinate leaves the order as it is, as Consul does.
func sortNear[T any](store *catalog.Store, near string, items []T, node func(T) string) error {
	if near == "" || len(items) < 2 {
		return nil
	}
	coords, err := store.CoordinateMap()
	if err != nil {
		return err
	}
	catalog.SortByDistance(items, coords[strings.ToLower(near)], coords, node)
	return nil
}

func instanceNode(in catalog.ServiceInstance) string { return in.Node.Node }
func nodeName(n *catalog.Node) string                { return n.Node }

// NearestDatacenters returns dcs sorted by the median estimated round trip
// time from this server to each datacenter's servers, by their WAN
// coordinates; datacenters with no server coordinate known come last, in
// their order. This server's own datacenter, when in dcs, is first. It is
// what a prepared query's Failover.NearestN picks from
// (PreparedQueryConfig.Datacenters).
func (e *Coordinate) NearestDatacenters(dcs []string) []string {
	out := slices.Clone(dcs)
	wan := e.cfg.WAN
	if wan == nil {
		return out
	}
	own, ok := wan.Coordinate()
	if !ok {
		return out
	}
	origin := toCatalogCoordinate(own)
	median := map[string]time.Duration{}
	for _, dc := range e.wanCoordinates() {
		var ds []time.Duration
		for _, c := range dc.Coordinates {
			if d, ok := catalog.Distance(origin, c.Coord); ok {
				ds = append(ds, d)
			}
		}
		if len(ds) > 0 {
			slices.Sort(ds)
			median[strings.ToLower(dc.Datacenter)] = ds[len(ds)/2]
		}
	}
	ownDC := strings.ToLower(e.cat.cfg.Datacenter)
	rank := func(dc string) (int, time.Duration) {
		dc = strings.ToLower(dc)
		if dc == ownDC {
			return 0, 0
		}
		if d, ok := median[dc]; ok {
			return 1, d
		}
		return 2, 0
	}
	slices.SortStableFunc(out, func(a, b string) int {
		ra, da := rank(a)
		rb, db := rank(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(da, db))
	})
	return out
}
