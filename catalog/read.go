package catalog

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hashicorp/go-memdb"
)

// Nodes returns every node, sorted by name, and the index of the nodes table.
func (s *Store) Nodes(ws WatchSet) (uint64, []*Node, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableNodes, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list nodes: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []*Node
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*Node))
	}
	return maxIndex(tx, tableNodes), out, nil
}

// Node returns one node by name (case-insensitive), or nil if there is none.
func (s *Store) Node(ws WatchSet, name string) (uint64, *Node, error) {
	tx := s.read(ws)
	ch, raw, err := tx.FirstWatch(tableNodes, "id", name)
	if err != nil {
		return 0, nil, fmt.Errorf("look up node %q: %w", name, err)
	}
	ws.Add(ch)
	n, _ := raw.(*Node)
	return maxIndex(tx, tableNodes), n, nil
}

// Services returns every service name with the union of its instances' tags
// (sorted, without duplicates) and the index of the services table.
func (s *Store) Services(ws WatchSet) (uint64, map[string][]string, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableServices, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list services: %w", err)
	}
	ws.Add(it.WatchCh())
	out := make(map[string][]string)
	for raw := it.Next(); raw != nil; raw = it.Next() {
		svc := raw.(*serviceRow).Service
		tags := out[svc.Service]
		if tags == nil {
			tags = []string{}
		}
		out[svc.Service] = append(tags, svc.Tags...)
	}
	for name, tags := range out {
		slices.Sort(tags)
		out[name] = slices.Compact(tags)
	}
	return maxIndex(tx, tableServices), out, nil
}

// NodeServices returns the services registered on one node, sorted by ID.
func (s *Store) NodeServices(ws WatchSet, node string) (uint64, []*Service, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableServices, "node", node)
	if err != nil {
		return 0, nil, fmt.Errorf("list services of node %q: %w", node, err)
	}
	ws.Add(it.WatchCh())
	var out []*Service
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*serviceRow).Service)
	}
	slices.SortFunc(out, func(a, b *Service) int { return cmp.Compare(a.ID, b.ID) })
	return maxIndex(tx, tableServices), out, nil
}

// ServiceInstances returns every instance of the named service (matched
// case-insensitively), filtered to those carrying tag when tag is not
// empty, each with its node and every check bearing on its health. They are
// sorted by node name, then service ID. Health filtering is the caller's
// choice (see ServiceInstance.Healthy). The index is the highest of the
// nodes, services and checks tables.
func (s *Store) ServiceInstances(ws WatchSet, name, tag string) (uint64, []ServiceInstance, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableServices, "service", name)
	if err != nil {
		return 0, nil, fmt.Errorf("list instances of %q: %w", name, err)
	}
	ws.Add(it.WatchCh())
	var out []ServiceInstance
	for raw := it.Next(); raw != nil; raw = it.Next() {
		row := raw.(*serviceRow)
		if tag != "" && !row.Service.HasTag(tag) {
			continue
		}
		inst, err := instance(tx, ws, row)
		if err != nil {
			return 0, nil, err
		}
		if inst.Node != nil {
			out = append(out, inst)
		}
	}
	slices.SortFunc(out, func(a, b ServiceInstance) int {
		return cmp.Or(cmp.Compare(a.Node.Node, b.Node.Node), cmp.Compare(a.Service.ID, b.Service.ID))
	})
	return maxIndex(tx, tableNodes, tableServices, tableChecks), out, nil
}

func instance(tx *memdb.Txn, ws WatchSet, row *serviceRow) (ServiceInstance, error) {
	ch, raw, err := tx.FirstWatch(tableNodes, "id", row.Node)
	if err != nil {
		return ServiceInstance{}, fmt.Errorf("look up node %q: %w", row.Node, err)
	}
	ws.Add(ch)
	node, _ := raw.(*Node)
	checks, checksCh, err := nodeChecks(tx, row.Node)
	if err != nil {
		return ServiceInstance{}, err
	}
	ws.Add(checksCh)
	relevant := checks[:0:0]
	for _, c := range checks {
		if c.ServiceID == "" || c.ServiceID == row.ID {
			relevant = append(relevant, c)
		}
	}
	return ServiceInstance{Node: node, Service: row.Service, Checks: relevant}, nil
}

// NodeChecks returns every check of a node (its own and its services').
func (s *Store) NodeChecks(ws WatchSet, node string) (uint64, []*Check, error) {
	tx := s.read(ws)
	checks, ch, err := nodeChecks(tx, node)
	if err != nil {
		return 0, nil, err
	}
	ws.Add(ch)
	return maxIndex(tx, tableChecks), checks, nil
}
