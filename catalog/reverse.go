package catalog

import (
	"fmt"
	"net/netip"
	"slices"
)

// Reverse returns what holds an address, for PTR answers: the names of the
// nodes registered with it and the names of the services registered with
// it as their own address (each name once, sorted). It is an index lookup,
// never a scan.
func (s *Store) Reverse(ws WatchSet, addr netip.Addr) (nodes, services []string, err error) {
	tx := s.read(ws)
	key := addr.String()
	it, err := tx.Get(tableNodes, "address", key)
	if err != nil {
		return nil, nil, fmt.Errorf("look up nodes at %s: %w", key, err)
	}
	ws.Add(it.WatchCh())
	for raw := it.Next(); raw != nil; raw = it.Next() {
		nodes = append(nodes, raw.(*Node).Node)
	}
	it, err = tx.Get(tableServices, "address", key)
	if err != nil {
		return nil, nil, fmt.Errorf("look up services at %s: %w", key, err)
	}
	ws.Add(it.WatchCh())
	for raw := it.Next(); raw != nil; raw = it.Next() {
		services = append(services, raw.(*serviceRow).Service.Service)
	}
	slices.Sort(nodes)
	slices.Sort(services)
	return nodes, slices.Compact(services), nil
}
