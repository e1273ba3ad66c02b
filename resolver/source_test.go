package resolver

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/cairndns/cairn/catalog"
)

// call is one call the fake source received.
type call struct {
	Method, DC, Name, Tag string
}

// fakeSource answers from fixed data and records what it is asked.
type fakeSource struct {
	dcs       []string                                        // known datacenters
	instances map[string]map[string][]catalog.ServiceInstance // dc → service → instances
	nodes     map[string]map[string]*catalog.Node             // dc → name → node
	reverse   map[netip.Addr][2][]string                      // address → {nodes, services}
	queries   map[string]map[string]*catalog.QueryResult      // dc → query name → result
	err       error                                           // returned by every call when set
	hook      func(ctx context.Context)                       // run at the start of every call when set

	mu    sync.Mutex
	calls []call
}

var _ Source = (*fakeSource)(nil)

func (f *fakeSource) record(c call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

// Calls returns the calls received so far and forgets them.
func (f *fakeSource) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeSource) check(ctx context.Context, dc string) error {
	if f.hook != nil {
		f.hook(ctx)
	}
	if f.err != nil {
		return f.err
	}
	if !slices.Contains(f.dcs, dc) {
		return fmt.Errorf("datacenter %q: %w", dc, ErrUnknownDatacenter)
	}
	return nil
}

func (f *fakeSource) Instances(ctx context.Context, dc, service, tag string) (*Instances, error) {
	f.record(call{"Instances", dc, service, tag})
	if err := f.check(ctx, dc); err != nil {
		return nil, err
	}
	var healthy, unhealthy []catalog.ServiceInstance
	for _, si := range f.instances[dc][service] {
		switch {
		case tag != "" && !si.Service.HasTag(tag):
		case si.Healthy(false):
			healthy = append(healthy, si)
		default:
			unhealthy = append(unhealthy, si)
		}
	}
	return NewInstances(healthy, unhealthy), nil
}

func (f *fakeSource) Node(ctx context.Context, dc, name string) (*catalog.Node, error) {
	f.record(call{"Node", dc, name, ""})
	if err := f.check(ctx, dc); err != nil {
		return nil, err
	}
	return f.nodes[dc][name], nil
}

func (f *fakeSource) Reverse(ctx context.Context, addr netip.Addr) (nodes, services []string, err error) {
	f.record(call{"Reverse", "", addr.String(), ""})
	if f.hook != nil {
		f.hook(ctx)
	}
	if f.err != nil {
		return nil, nil, f.err
	}
	r := f.reverse[addr]
	return r[0], r[1], nil
}

func (f *fakeSource) PreparedQuery(ctx context.Context, dc, nameOrID string) (*catalog.QueryResult, error) {
	f.record(call{"PreparedQuery", dc, nameOrID, ""})
	if err := f.check(ctx, dc); err != nil {
		return nil, err
	}
	return f.queries[dc][nameOrID], nil
}

// instance returns an instance of service on a node.
func instance(node, nodeAddr, service, svcAddr string, port int, tags ...string) catalog.ServiceInstance {
	return catalog.ServiceInstance{
		Node:    &catalog.Node{Node: node, Address: nodeAddr},
		Service: &catalog.Service{ID: service, Service: service, Address: svcAddr, Port: port, Tags: tags, Weights: catalog.DefaultWeights},
	}
}

// newFakeSource returns the source most tests use:
//
//	dc1: web on node1 (10.0.0.1:80, tags v1, primary) and node2 (10.0.1.2:81, tag v2)
//	     nodes node1 10.0.0.1, node2 10.0.0.2, node3 10.0.0.3 (meta rack=r1, az=a)
//	dc2: web on node9 (10.1.0.9:80)
//	queries in dc1: web-fo, failed over to dc2's web (TTL 5s); web-none, no healthy instance
func newFakeSource() *fakeSource {
	return &fakeSource{
		dcs: []string{"dc1", "dc2"},
		instances: map[string]map[string][]catalog.ServiceInstance{
			"dc1": {"web": {
				instance("node1", "10.0.0.1", "web", "", 80, "v1", "primary"),
				instance("node2", "10.0.0.2", "web", "10.0.1.2", 81, "v2"),
			}},
			"dc2": {"web": {instance("node9", "10.1.0.9", "web", "", 80)}},
		},
		nodes: map[string]map[string]*catalog.Node{
			"dc1": {
				"node1": {Node: "node1", Address: "10.0.0.1"},
				"node2": {Node: "node2", Address: "10.0.0.2"},
				"node3": {Node: "node3", Address: "10.0.0.3", Meta: map[string]string{"rack": "r1", "az": "a"}},
			},
		},
		queries: map[string]map[string]*catalog.QueryResult{
			"dc1": {
				"web-fo": {Service: "web", Datacenter: "dc2", Failovers: 1, DNS: catalog.QueryDNS{TTL: "5s"},
					Nodes: []catalog.ServiceInstance{instance("node9", "10.1.0.9", "web", "", 80)}},
				"web-none": {Service: "web", Datacenter: "dc1", Failovers: 1},
			},
		},
		reverse: map[netip.Addr][2][]string{
			netip.MustParseAddr("10.0.0.1"):    {{"node1"}, nil},
			netip.MustParseAddr("10.0.1.2"):    {nil, {"web"}},
			netip.MustParseAddr("2001:db8::1"): {{"node6"}, nil},
		},
	}
}
