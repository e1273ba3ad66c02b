package httpapi

import (
	"net/http"
	"slices"

	"github.com/cairndns/cairn/catalog"
)

// node is a node as the catalog endpoints give it. Its fields, and those
// of the other shapes the endpoints give, are Consul's: ?filter selects on
// them by name (filter.go).
type node struct {
	ID              string
	Node            string
	Address         string
	Datacenter      string
	TaggedAddresses map[string]string
	Meta            map[string]string
	CreateIndex     uint64
	ModifyIndex     uint64
}

// catalogService is one instance as GET /v1/catalog/service/<name> gives it
// (Consul's ServiceNode, without the service mesh's fields).
type catalogService struct {
	ID                       string
	Node                     string
	Address                  string
	Datacenter               string
	TaggedAddresses          map[string]string
	NodeMeta                 map[string]string
	ServiceKind              string
	ServiceID                string
	ServiceName              string
	ServiceTags              []string
	ServiceAddress           string
	ServiceTaggedAddresses   map[string]catalog.ServiceAddress `json:",omitempty"`
	ServicePort              int
	ServiceMeta              map[string]string
	ServiceWeights           weights
	ServiceEnableTagOverride bool
	CreateIndex              uint64
	ModifyIndex              uint64
}

func toNode(n *catalog.Node) *node {
	return &node{
		ID: n.ID, Node: n.Node, Address: n.Address, Datacenter: n.Datacenter,
		TaggedAddresses: nonNilMap(n.TaggedAddresses),
		Meta:            nonNilMap(n.Meta), CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
}

func (s *Server) catalogNodes(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	opts.Near = s.resolveNear(opts.Near) // coordinate_endpoints.go
	nodes, meta, err := s.catalog.Nodes(r.Context(), opts)
	if err != nil {
		return err
	}
	out := make([]*node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, toNode(n))
	}
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, meta, out)
	return nil
}

// catalogServices maps each service name to the union of its tags. With
// a ?filter, as Consul's, the filter selects among every instance of every
// service (with catalog/service's fields: ServiceName, ServiceTags,
// NodeMeta, ...), and the answer lists the services with an instance
// selected, each with the union of the selected instances' tags.
func (s *Server) catalogServices(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	if hasFilter(r) {
		return s.filteredServices(w, r, opts)
	}
	services, meta, err := s.catalog.Services(r.Context(), opts)
	if err != nil {
		return err
	}
	if services == nil {
		services = map[string][]string{}
	}
	for name, tags := range services {
		services[name] = nonNil(tags)
	}
	writeRead(w, r, meta, services)
	return nil
}

// filteredServices answers GET /v1/catalog/services?filter=.
func (s *Server) filteredServices(w http.ResponseWriter, r *http.Request, opts QueryOptions) error {
	insts, meta, err := s.catalog.ServiceNodes(r.Context(), opts)
	if err != nil {
		return err
	}
	all := make([]*catalogService, 0, len(insts))
	for _, in := range insts {
		all = append(all, toCatalogService(in.Node, in.Service))
	}
	kept, err := applyFilter(r, all)
	if err != nil {
		return err
	}
	services := make(map[string][]string)
	for _, cs := range kept {
		services[cs.ServiceName] = append(nonNil(services[cs.ServiceName]), cs.ServiceTags...)
	}
	for name, tags := range services {
		slices.Sort(tags)
		services[name] = slices.Compact(tags)
	}
	writeRead(w, r, meta, services)
	return nil
}

func (s *Server) catalogService(w http.ResponseWriter, r *http.Request) error {
	insts, meta, err := s.serviceInstances(w, r)
	if err != nil {
		return err
	}
	out := make([]*catalogService, 0, len(insts))
	for _, in := range insts {
		out = append(out, toCatalogService(in.Node, in.Service))
	}
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, meta, out)
	return nil
}

func toCatalogService(n *catalog.Node, svc *catalog.Service) *catalogService {
	return &catalogService{
		ID: n.ID, Node: n.Node, Address: n.Address, Datacenter: n.Datacenter,
		TaggedAddresses: nonNilMap(n.TaggedAddresses), NodeMeta: nonNilMap(n.Meta),
		ServiceID: svc.ID, ServiceName: svc.Service, ServiceTags: nonNil(svc.Tags),
		ServiceAddress: svc.Address, ServiceTaggedAddresses: svc.TaggedAddresses,
		ServicePort: svc.Port, ServiceMeta: nonNilMap(svc.Meta),
		ServiceWeights: weights{Passing: svc.Weights.Passing, Warning: svc.Weights.Warning},
		CreateIndex:    svc.CreateIndex, ModifyIndex: svc.ModifyIndex,
	}
}

func (s *Server) statusLeader(w http.ResponseWriter, r *http.Request) error {
	leader, err := s.status.Leader(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, leader)
	return nil
}

func (s *Server) statusPeers(w http.ResponseWriter, r *http.Request) error {
	peers, err := s.status.Peers(r.Context())
	if err != nil {
		return err
	}
	if peers == nil {
		peers = []string{}
	}
	writeJSON(w, http.StatusOK, peers)
	return nil
}
