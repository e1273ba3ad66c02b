package httpapi

import (
	"net/http"

	"github.com/cairndns/cairn/catalog"
)

// node is a node as the catalog endpoints give it.
type node struct {
	ID          string
	Node        string
	Address     string
	Datacenter  string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// catalogService is one instance as GET /v1/catalog/service/<name> gives it.
type catalogService struct {
	ID             string
	Node           string
	Address        string
	Datacenter     string
	NodeMeta       map[string]string
	ServiceID      string
	ServiceName    string
	ServiceTags    []string
	ServiceAddress string
	ServicePort    int
	ServiceMeta    map[string]string
	ServiceWeights weights
	CreateIndex    uint64
	ModifyIndex    uint64
}

func toNode(n *catalog.Node) *node {
	return &node{
		ID: n.ID, Node: n.Node, Address: n.Address, Datacenter: n.Datacenter,
		Meta: nonNilMap(n.Meta), CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
}

func (s *Server) catalogNodes(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
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

func (s *Server) catalogServices(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
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
		ID: n.ID, Node: n.Node, Address: n.Address, Datacenter: n.Datacenter, NodeMeta: nonNilMap(n.Meta),
		ServiceID: svc.ID, ServiceName: svc.Service, ServiceTags: nonNil(svc.Tags),
		ServiceAddress: svc.Address, ServicePort: svc.Port, ServiceMeta: nonNilMap(svc.Meta),
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
