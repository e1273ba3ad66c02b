package httpapi

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// healthCheck is a check as the health endpoints give it (Consul's
// HealthCheck). ServiceTags is [] for a node's checks, as Consul's.
type healthCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	ServiceTags []string
	Type        string
	CreateIndex uint64
	ModifyIndex uint64
}

func toHealthCheck(c *catalog.Check) *healthCheck {
	return &healthCheck{
		Node: c.Node, CheckID: c.CheckID, Name: c.Name, Status: string(c.Status),
		Notes: c.Notes, Output: c.Output, ServiceID: c.ServiceID, ServiceName: c.ServiceName,
		ServiceTags: nonNil(c.ServiceTags), Type: c.Type, CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
	}
}

// serviceEntry is one instance as GET /v1/health/service/<name> gives it.
type serviceEntry struct {
	Node    *node
	Service *entryService
	Checks  []*healthCheck
}

// entryService is the service of a serviceEntry: an agentService with its
// indexes, written out flat so that ?filter selectors (Service.Tags, ...)
// reach every field.
type entryService struct {
	Kind              string `json:",omitempty"`
	ID                string
	Service           string
	Tags              []string
	Meta              map[string]string
	Port              int
	Ports             []catalog.ServicePort `json:",omitempty"`
	Address           string
	SocketPath        string                            `json:",omitempty"`
	TaggedAddresses   map[string]catalog.ServiceAddress `json:",omitempty"`
	Weights           weights
	EnableTagOverride bool
	Proxy             json.RawMessage `json:",omitempty"`
	Datacenter        string
	Locality          *catalog.Locality `json:",omitempty"`
	CreateIndex       uint64
	ModifyIndex       uint64
}

// healthStates are the values of /v1/health/state/<state>.
var healthStates = []string{
	string(catalog.HealthPassing), string(catalog.HealthWarning), string(catalog.HealthCritical),
	string(catalog.HealthMaintenance), "any",
}

func (s *Server) healthService(w http.ResponseWriter, r *http.Request) error {
	insts, meta, err := s.serviceInstances(w, r)
	if err != nil {
		return err
	}
	insts = keepOnNodes(insts, nodeMetaFilter(r), instanceNode)
	// ?passing keeps only instances whose every check (the node's too)
	// passes: warning, critical and maintenance are left out.
	passing := boolParam(r, "passing")
	out := make([]*serviceEntry, 0, len(insts))
	for _, in := range insts {
		if passing && !in.Healthy(true) {
			continue
		}
		out = append(out, toServiceEntry(in))
	}
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, meta, out)
	return nil
}

func toServiceEntry(in catalog.ServiceInstance) *serviceEntry {
	sv := in.Service
	svc := toEntryService(sv, in.Node.Datacenter)
	checks := make([]*healthCheck, 0, len(in.Checks))
	for _, c := range in.Checks {
		hc := toHealthCheck(c)
		// The instance's own service gives its checks' tags: a server of
		// an older release answers checks without them.
		if c.ServiceID != "" {
			hc.ServiceTags = nonNil(sv.Tags)
		}
		checks = append(checks, hc)
	}
	return &serviceEntry{Node: toNode(in.Node), Service: svc, Checks: checks}
}

// toEntryService gives a service of datacenter dc Consul's AgentService
// shape with its indexes.
func toEntryService(sv *catalog.Service, dc string) *entryService {
	return &entryService{
		ID: sv.ID, Service: sv.Service, Tags: nonNil(sv.Tags), Meta: nonNilMap(sv.Meta),
		Port: sv.Port, Ports: sv.Ports, Address: sv.Address, SocketPath: sv.SocketPath,
		TaggedAddresses:   sv.TaggedAddresses,
		Weights:           weights{Passing: sv.Weights.Passing, Warning: sv.Weights.Warning},
		EnableTagOverride: sv.EnableTagOverride, Locality: sv.Locality, Kind: sv.Kind, Proxy: sv.Proxy,
		Datacenter: dc, CreateIndex: sv.CreateIndex, ModifyIndex: sv.ModifyIndex,
	}
}

// healthChecks answers the checks of every instance of the service.
func (s *Server) healthChecks(w http.ResponseWriter, r *http.Request) error {
	return s.writeChecks(w, r, true, rpc.MethodCatalogServiceChecks, func(opts rpc.QueryOptions) any {
		return &rpc.ServiceChecksRequest{QueryOptions: opts, Service: r.PathValue("service")}
	})
}

// healthNode answers every check registered on the node: its own and its
// services'.
func (s *Server) healthNode(w http.ResponseWriter, r *http.Request) error {
	return s.writeChecks(w, r, false, rpc.MethodCatalogNodeChecks, func(opts rpc.QueryOptions) any {
		return &rpc.NodeChecksRequest{QueryOptions: opts, Node: r.PathValue("node")}
	})
}

func (s *Server) healthState(w http.ResponseWriter, r *http.Request) error {
	state := r.PathValue("state")
	if !slices.Contains(healthStates, state) {
		return badRequest("state", "must be passing, warning, critical, maintenance or any, got %q", state)
	}
	return s.writeChecks(w, r, true, rpc.MethodCatalogChecksInState, func(opts rpc.QueryOptions) any {
		return &rpc.ChecksInStateRequest{QueryOptions: opts, State: state}
	})
}

// writeChecks answers a read of checks (method, answered with an
// rpc.ChecksResponse, whose args are made with the request's options) as a
// JSON array of HealthCheck, ordered by node and check ID, kept by
// ?filter (and ?node-meta when nodeMeta: node_meta.go), with its meta
// headers.
func (s *Server) writeChecks(w http.ResponseWriter, r *http.Request, nodeMeta bool, method string, args func(rpc.QueryOptions) any) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.ChecksResponse
	if err := s.door.RPC(r.Context(), method, args(opts), &reply); err != nil {
		return err
	}
	checks := reply.Checks
	if nodeMeta {
		if checks, err = s.checksOnNodes(r.Context(), opts, checks, nodeMetaFilter(r)); err != nil {
			return err
		}
	}
	out := make([]*healthCheck, 0, len(checks))
	for _, c := range checks {
		out = append(out, toHealthCheck(c))
	}
	slices.SortFunc(out, func(a, b *healthCheck) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.CheckID, b.CheckID))
	})
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, out)
	return nil
}
