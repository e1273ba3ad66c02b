package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// This file holds the catalog endpoints about one node and the catalog's
// own writes: GET /v1/catalog/node/<node>, GET
// /v1/catalog/node-services/<node>, PUT /v1/catalog/register and PUT
// /v1/catalog/deregister.

// catalogNode is the body of GET /v1/catalog/node/<node>: the node and its
// services keyed by ID (Consul's CatalogNode).
type catalogNode struct {
	Node     *node
	Services map[string]*entryService
}

// catalogNodeServiceList is the body of GET
// /v1/catalog/node-services/<node>: the node and its services as a list
// (Consul's CatalogNodeServiceList).
type catalogNodeServiceList struct {
	Node     *node
	Services []*entryService
}

// readNode reads the request's {node} (nil when there is no such node)
// and its services, sorted by ID.
func (s *Server) readNode(r *http.Request) (*catalog.Node, []*catalog.Service, rpc.QueryMeta, error) {
	name := r.PathValue("node")
	if name == "" {
		return nil, nil, rpc.QueryMeta{}, badRequest("node", "is required in the path")
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, nil, rpc.QueryMeta{}, err
	}
	var reply rpc.NodeServicesResponse
	err = s.door.RPC(r.Context(), rpc.MethodCatalogNodeServices, &rpc.NodeServicesRequest{QueryOptions: opts, Node: name}, &reply)
	return reply.Node, reply.Services, reply.QueryMeta, err
}

// catalogNodeGet answers a node that is not registered with a 200 and a
// JSON null, as Consul does: its clients read that as "no such node" and
// a blocking query can wait for the node to appear. ?filter applies to
// the node's services, as Consul's.
func (s *Server) catalogNodeGet(w http.ResponseWriter, r *http.Request) error {
	n, svcs, meta, err := s.readNode(r)
	if err != nil {
		return err
	}
	if n == nil {
		writeRead(w, r, meta, nil)
		return nil
	}
	list := make([]*entryService, 0, len(svcs))
	for _, svc := range svcs {
		list = append(list, toEntryService(svc, n.Datacenter))
	}
	if list, err = applyFilter(r, list); err != nil {
		return err
	}
	out := &catalogNode{Node: toNode(n), Services: make(map[string]*entryService, len(list))}
	for _, svc := range list {
		out.Services[svc.ID] = svc
	}
	writeRead(w, r, meta, out)
	return nil
}

// catalogNodeServices answers as catalogNodeGet, with the services as a
// list (?filter applies to them, as Consul's).
func (s *Server) catalogNodeServices(w http.ResponseWriter, r *http.Request) error {
	n, svcs, meta, err := s.readNode(r)
	if err != nil {
		return err
	}
	if n == nil {
		writeRead(w, r, meta, nil)
		return nil
	}
	list := make([]*entryService, 0, len(svcs))
	for _, svc := range svcs {
		list = append(list, toEntryService(svc, n.Datacenter))
	}
	if list, err = applyFilter(r, list); err != nil {
		return err
	}
	writeRead(w, r, meta, &catalogNodeServiceList{Node: toNode(n), Services: list})
	return nil
}

// catalogRegistration is the body of PUT /v1/catalog/register (Consul's
// CatalogRegistration). Consul's clients send every field of it, most of
// them empty, and fields cairn has no use for (Locality,
// the service's Proxy and Connect, ...); the body is decoded leniently,
// so those are ignored, as Consul ignores fields it does not know.
type catalogRegistration struct {
	ID              string
	Node            string
	Address         string
	NodeMeta        map[string]string
	TaggedAddresses map[string]string
	Datacenter      string
	Service         *registrationService
	Check           *registrationCheck
	Checks          []*registrationCheck
	SkipNodeUpdate  bool
}

// registrationService is the service of a catalogRegistration (Consul's
// AgentService).
type registrationService struct {
	ID                string
	Service           string
	Tags              []string
	Meta              map[string]string
	Port              int
	Address           string
	TaggedAddresses   map[string]catalog.ServiceAddress
	Weights           *weights
	EnableTagOverride bool
	Kind              string
	// Proxy is kept as sent and given back (catalog.Service.Proxy).
	Proxy json.RawMessage
}

// registrationCheck is a check of a catalogRegistration (Consul's
// AgentCheck, or HealthCheck in Checks).
type registrationCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	Type        string
}

// catalogDeregistration is the body of PUT /v1/catalog/deregister.
type catalogDeregistration struct {
	Node       string
	Datacenter string
	ServiceID  string
	CheckID    string
}

func (s *Server) catalogRegister(w http.ResponseWriter, r *http.Request) error {
	var body catalogRegistration
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	req := &catalog.RegisterRequest{
		ID: body.ID, Node: body.Node, Address: body.Address, NodeMeta: body.NodeMeta,
		TaggedAddresses: body.TaggedAddresses, SkipNodeUpdate: body.SkipNodeUpdate,
	}
	if sv := body.Service; sv != nil {
		svc := &catalog.Service{ID: sv.ID, Service: sv.Service, Tags: sv.Tags, Meta: sv.Meta, Port: sv.Port, Address: sv.Address,
			TaggedAddresses: sv.TaggedAddresses, EnableTagOverride: sv.EnableTagOverride, Kind: sv.Kind}
		if p := sv.Proxy; len(p) > 0 && string(p) != "null" {
			svc.Proxy = p
		}
		// Consul's clients send zero weights for "not set".
		if sv.Weights != nil && *sv.Weights != (weights{}) {
			svc.Weights = catalog.Weights{Passing: sv.Weights.Passing, Warning: sv.Weights.Warning}
		}
		if svc.ID == "" {
			svc.ID = svc.Service
		}
		req.Service = svc
	}
	checks := body.Checks
	if body.Check != nil {
		checks = append([]*registrationCheck{body.Check}, checks...)
	}
	for i, c := range checks {
		if c == nil {
			return badRequest("Checks", "entry %d is null", i)
		}
		chk := &catalog.Check{
			Node: body.Node, CheckID: c.CheckID, Name: c.Name, Status: catalog.HealthStatus(c.Status),
			Notes: c.Notes, Output: c.Output, ServiceID: c.ServiceID, ServiceName: c.ServiceName, Type: c.Type,
		}
		if c.Node != "" && !strings.EqualFold(c.Node, body.Node) {
			return badRequest("Check.Node", "must be the registration's node %q, got %q", body.Node, c.Node)
		}
		// A check without a status starts critical, as Consul's.
		if chk.Status == "" {
			chk.Status = catalog.HealthCritical
		}
		// Each names the other when one is missing, as in Consul.
		if chk.Name == "" {
			chk.Name = chk.CheckID
		}
		if chk.CheckID == "" {
			chk.CheckID = chk.Name
		}
		req.Checks = append(req.Checks, chk)
	}
	args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: dcParam(r, body.Datacenter)}, Registration: *req}
	if err := s.door.RPC(r.Context(), rpc.MethodCatalogRegister, args, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

func (s *Server) catalogDeregister(w http.ResponseWriter, r *http.Request) error {
	var body catalogDeregistration
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	if body.Node == "" {
		return badRequest("Node", "is required")
	}
	args := &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: dcParam(r, body.Datacenter)},
		Deregistration: catalog.DeregisterRequest{Node: body.Node, ServiceID: body.ServiceID, CheckID: body.CheckID}}
	if err := s.door.RPC(r.Context(), rpc.MethodCatalogDeregister, args, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

// dcParam is the datacenter a write goes to: the body's, else ?dc, else
// "" (the agent's).
func dcParam(r *http.Request, body string) string {
	if body != "" {
		return strings.ToLower(body)
	}
	return strings.ToLower(r.URL.Query().Get("dc"))
}

// decodeBodyLenient decodes a JSON body as decodeBody does but ignores
// fields v does not have: for the bodies Consul's clients fill with every
// field of Consul's structs.
func (s *Server) decodeBodyLenient(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decode(w, r, v, false)
}
