package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
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
	ServicePorts             []catalog.ServicePort `json:",omitempty"`
	ServiceSocketPath        string                `json:",omitempty"`
	ServiceLocality          *catalog.Locality     `json:",omitempty"`
	ServiceProxy             json.RawMessage       `json:",omitempty"`
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
	var reply rpc.NodesResponse
	args := &rpc.NodesRequest{QueryOptions: opts, Near: s.near(r)} // coordinate_endpoints.go
	if err := s.door.RPC(r.Context(), rpc.MethodCatalogNodes, args, &reply); err != nil {
		return err
	}
	out := make([]*node, 0, len(reply.Nodes))
	for _, n := range keepOnNodes(reply.Nodes, nodeMetaFilter(r), func(n *catalog.Node) *catalog.Node { return n }) {
		out = append(out, toNode(n))
	}
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, out)
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
	if hasFilter(r) || r.URL.Query().Has("node-meta") {
		return s.filteredServices(w, r, opts)
	}
	var reply rpc.ServicesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodCatalogServices, &rpc.ServicesRequest{QueryOptions: opts}, &reply); err != nil {
		return err
	}
	services := reply.Services
	if services == nil {
		services = map[string][]string{}
	}
	for name, tags := range services {
		services[name] = nonNil(tags)
	}
	writeRead(w, r, reply.QueryMeta, services)
	return nil
}

// filteredServices answers GET /v1/catalog/services?filter= (or
// ?node-meta=). The servers answer every instance of every service with
// its node and without checks, sorted by service name, node, then service
// ID.
func (s *Server) filteredServices(w http.ResponseWriter, r *http.Request, opts rpc.QueryOptions) error {
	var reply rpc.ServicesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodCatalogServices, &rpc.ServicesRequest{QueryOptions: opts, Instances: true}, &reply); err != nil {
		return err
	}
	insts := keepOnNodes(reply.Instances, nodeMetaFilter(r), instanceNode)
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
	writeRead(w, r, reply.QueryMeta, services)
	return nil
}

func (s *Server) catalogService(w http.ResponseWriter, r *http.Request) error {
	insts, meta, err := s.serviceInstances(w, r)
	if err != nil {
		return err
	}
	insts = keepOnNodes(insts, nodeMetaFilter(r), instanceNode)
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
		ServiceWeights:           weights{Passing: svc.Weights.Passing, Warning: svc.Weights.Warning},
		ServiceEnableTagOverride: svc.EnableTagOverride, ServicePorts: svc.Ports,
		ServiceSocketPath: svc.SocketPath, ServiceLocality: svc.Locality,
		ServiceKind: svc.Kind, ServiceProxy: svc.Proxy,
		CreateIndex: svc.CreateIndex, ModifyIndex: svc.ModifyIndex,
	}
}

// statusLeader answers the Raft address of the leader of the datacenter
// (?dc, else the agent's).
func (s *Server) statusLeader(w http.ResponseWriter, r *http.Request) error {
	leader, err := s.leader(r.Context(), dcParam(r, ""))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, leader)
	return nil
}

// statusPeers answers the Raft addresses of the servers of the
// datacenter (?dc, else the agent's).
func (s *Server) statusPeers(w http.ResponseWriter, r *http.Request) error {
	cfg, err := s.raftConfiguration(r.Context(), dcParam(r, ""))
	if err != nil {
		return err
	}
	peers := make([]string, 0, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		peers = append(peers, srv.Address)
	}
	writeJSON(w, http.StatusOK, peers)
	return nil
}

// statusTimeout bounds the status reads, which a client makes without
// a deadline of its own.
const statusTimeout = 5 * time.Second

// leader returns the leader's address as a server of datacenter dc ("":
// the agent's) sees it, "" when it knows none.
func (s *Server) leader(ctx context.Context, dc string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.LeaderResponse
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: cmp.Or(dc, s.cfg.Datacenter), AllowStale: true}}
	if err := s.door.RPC(ctx, rpc.MethodStatusLeader, args, &reply); err != nil {
		return "", err
	}
	return reply.Leader, nil
}

// raftConfiguration returns the servers of datacenter dc ("": the
// agent's) as a server's Raft knows them.
func (s *Server) raftConfiguration(ctx context.Context, dc string) (*rpc.RaftConfigurationResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.RaftConfigurationResponse
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: cmp.Or(dc, s.cfg.Datacenter), AllowStale: true}}
	if err := s.door.RPC(ctx, rpc.MethodStatusRaftConfiguration, args, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}
