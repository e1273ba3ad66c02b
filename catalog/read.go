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
	it, err := nodeRows(tx, tableServices, node)
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

// ServiceNodes returns every instance of every service with its node and
// without checks (Checks nil), sorted by service name, node name, then
// service ID, read in one transaction: what a ?filter on the list of
// services is evaluated against. ws watches the nodes and services tables
// as a whole. The index is the higher of theirs.
func (s *Store) ServiceNodes(ws WatchSet) (uint64, []ServiceInstance, error) {
	tx := s.read(ws)
	nodes, err := tx.Get(tableNodes, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list nodes: %w", err)
	}
	ws.Add(nodes.WatchCh())
	it, err := tx.Get(tableServices, "id")
	if err != nil {
		return 0, nil, fmt.Errorf("list services: %w", err)
	}
	ws.Add(it.WatchCh())
	var out []ServiceInstance
	for raw := it.Next(); raw != nil; raw = it.Next() {
		row := raw.(*serviceRow)
		n, err := tx.First(tableNodes, "id", row.Node)
		if err != nil {
			return 0, nil, fmt.Errorf("look up node %q: %w", row.Node, err)
		}
		if n != nil {
			out = append(out, ServiceInstance{Node: n.(*Node), Service: row.Service})
		}
	}
	slices.SortFunc(out, func(a, b ServiceInstance) int {
		return cmp.Or(cmp.Compare(a.Service.Service, b.Service.Service),
			cmp.Compare(a.Node.Node, b.Node.Node), cmp.Compare(a.Service.ID, b.Service.ID))
	})
	return maxIndex(tx, tableNodes, tableServices), out, nil
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

// NodeChecks returns every check of a node (matched case-insensitively):
// its own and its services', sorted by check ID. The index is the checks
// table's.
func (s *Store) NodeChecks(ws WatchSet, node string) (uint64, []*Check, error) {
	tx := s.read(ws)
	checks, ch, err := nodeChecks(tx, node)
	if err != nil {
		return 0, nil, err
	}
	ws.Add(ch)
	slices.SortFunc(checks, compareChecks)
	return maxIndex(tx, tableChecks), checks, nil
}

// ServiceChecks returns the checks of every instance of the named service
// (matched case-insensitively): service-level checks only, not those of the
// instances' nodes (Consul's /v1/health/checks/<service>). They are sorted
// by node, then check ID. The index is the checks table's.
func (s *Store) ServiceChecks(ws WatchSet, service string) (uint64, []*Check, error) {
	tx := s.read(ws)
	it, err := tx.Get(tableChecks, "service", service)
	if err != nil {
		return 0, nil, fmt.Errorf("list checks of service %q: %w", service, err)
	}
	idx, checks := collectChecks(tx, ws, it)
	return idx, checks, nil
}

// ChecksInState returns every check, of nodes and of services, whose status
// is state, or every check when state is HealthAny; sorted by node, then
// check ID. The index is the checks table's. Any other state is refused
// with a *FieldError on "State" (see ValidateHealthState).
//
// Passing checks have no index entry (checkRow.Unhealthy): they are most
// of the table, so state passing scans it, and ws then watches the whole
// table, as for HealthAny.
func (s *Store) ChecksInState(ws WatchSet, state HealthStatus) (uint64, []*Check, error) {
	if err := ValidateHealthState("State", string(state)); err != nil {
		return 0, nil, err
	}
	tx := s.read(ws)
	if state == HealthMaintenance {
		return maintenanceChecks(tx, ws)
	}
	var it memdb.ResultIterator
	var err error
	switch state {
	case HealthAny:
		it, err = tx.Get(tableChecks, "id")
	case HealthPassing:
		it, err = tx.Get(tableChecks, "id")
		if err == nil {
			it = memdb.NewFilterIterator(it, func(raw any) bool { return raw.(*checkRow).Check.Status != HealthPassing })
		}
	default:
		it, err = tx.Get(tableChecks, "unhealthy", string(state))
	}
	if err != nil {
		return 0, nil, fmt.Errorf("list checks in state %q: %w", state, err)
	}
	idx, checks := collectChecks(tx, ws, it)
	return idx, checks, nil
}

// maintenanceChecks answers ChecksInState(HealthMaintenance): the critical
// checks of Type CheckTypeMaintenance and those written with the status
// of older releases.
func maintenanceChecks(tx *memdb.Txn, ws WatchSet) (uint64, []*Check, error) {
	crit, err := tx.Get(tableChecks, "unhealthy", string(HealthCritical))
	if err != nil {
		return 0, nil, fmt.Errorf("list checks in maintenance: %w", err)
	}
	old, err := tx.Get(tableChecks, "unhealthy", string(HealthMaintenance))
	if err != nil {
		return 0, nil, fmt.Errorf("list checks in maintenance: %w", err)
	}
	crit = memdb.NewFilterIterator(crit, func(raw any) bool { return raw.(*checkRow).Check.Type != CheckTypeMaintenance })
	idx, checks := collectChecks(tx, ws, crit)
	_, legacy := collectChecks(tx, ws, old)
	checks = append(checks, legacy...)
	slices.SortFunc(checks, compareChecks)
	return idx, checks, nil
}

// collectChecks drains an iterator over the checks table, watching it in
// ws, and returns the checks table's index and the checks, sorted.
func collectChecks(tx *memdb.Txn, ws WatchSet, it memdb.ResultIterator) (uint64, []*Check) {
	ws.Add(it.WatchCh())
	var out []*Check
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*checkRow).Check)
	}
	slices.SortFunc(out, compareChecks)
	return maxIndex(tx, tableChecks), out
}

// compareChecks orders checks by node, then check ID, in the order of the
// checks table's id index: node names compare case-insensitively, as
// nodes are looked up, so the checks of one node stay together.
func compareChecks(a, b *Check) int {
	return cmp.Or(compareFold(a.Node, b.Node), cmp.Compare(a.CheckID, b.CheckID))
}

// compareFold compares two strings as their ASCII-lowercased forms would
// compare, without allocating. Node names are DNS labels, hence ASCII.
func compareFold(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmp.Compare(lowerASCII(a[i]), lowerASCII(b[i])); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
