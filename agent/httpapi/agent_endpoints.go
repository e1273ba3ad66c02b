package httpapi

import (
	"net/http"

	"github.com/cairndns/cairn/acl"

	"github.com/cairndns/cairn/catalog"
)

// weights is the JSON shape of catalog.Weights.
type weights struct {
	Passing int
	Warning int
}

// serviceRegistration is the body of PUT /v1/agent/service/register.
type serviceRegistration struct {
	ID      string
	Name    string
	Tags    []string
	Address string
	Port    int
	Meta    map[string]string
	Weights *weights
	// TaggedAddresses are the service's addresses on other networks.
	TaggedAddresses map[string]catalog.ServiceAddress
	// EnableTagOverride, SocketPath, Ports and Locality are kept and
	// given back (catalog.Service says what each does).
	EnableTagOverride bool
	SocketPath        string
	Ports             []catalog.ServicePort
	Locality          *catalog.Locality
	// Check and Checks are the service's health checks (Consul's
	// AgentServiceCheck); both may be given.
	Check  *checkBody
	Checks []*checkBody
}

// agentService is a service as GET /v1/agent/services lists it.
type agentService struct {
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
	// ContentHash changes whenever the service's registration does: a
	// client blocks on it with ?hash= (Consul's hash-based watch).
	ContentHash string            `json:",omitempty"`
	Datacenter  string            `json:",omitempty"`
	Locality    *catalog.Locality `json:",omitempty"`
}

func (s *Server) agentServiceRegister(w http.ResponseWriter, r *http.Request) error {
	var reg serviceRegistration
	if err := s.decodeBody(w, r, &reg); err != nil {
		return err
	}
	svc := &catalog.Service{
		ID: reg.ID, Service: reg.Name, Tags: reg.Tags, Address: reg.Address,
		Port: reg.Port, Meta: reg.Meta, TaggedAddresses: reg.TaggedAddresses,
		EnableTagOverride: reg.EnableTagOverride, SocketPath: reg.SocketPath, Ports: reg.Ports, Locality: reg.Locality,
	}
	if reg.Weights != nil {
		svc.Weights = catalog.Weights{Passing: reg.Weights.Passing, Warning: reg.Weights.Warning}
		if svc.Weights == (catalog.Weights{}) {
			return badRequest("Weights.Passing", "must be between 1 and 65535, got 0")
		}
	}
	// The service is checked before its checks, so that a bad service is
	// reported first; the Local fills in its defaults itself.
	norm := *svc
	if err := catalog.NormalizeService(&norm); err != nil {
		return err
	}
	defs, err := s.serviceChecks(&norm, reg.Check, reg.Checks)
	if err != nil {
		return err
	}
	// The name registered and, when the ID is taken, the name it had.
	if err := s.permission(r, "service", "write", norm.Service, func(a *acl.Authorizer) bool { return a.ServiceWrite(norm.Service) }); err != nil {
		return err
	}
	if err := s.mayWriteService(r, norm.ID); err != nil {
		return err
	}
	for _, def := range defs {
		if err := s.mayWriteCheck(r, def.ID); err != nil {
			return err
		}
	}
	if err := s.local.AddService(r.Context(), svc, defs); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) agentServiceDeregister(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if id == "" {
		return badRequest("ID", "is required in the path: /v1/agent/service/deregister/<id>")
	}
	if err := s.mayWriteService(r, id); err != nil {
		return err
	}
	if err := s.local.RemoveService(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) agentServices(w http.ResponseWriter, r *http.Request) error {
	services, err := s.readableServices(r)
	if err != nil {
		return err
	}
	list := make([]*agentService, 0, len(services))
	for _, svc := range services {
		list = append(list, s.toAgentService(svc))
	}
	if list, err = applyFilter(r, list); err != nil {
		return err
	}
	out := make(map[string]*agentService, len(list))
	for _, svc := range list {
		out[svc.ID] = svc
	}
	writeJSONPretty(w, r, out)
	return nil
}

// toAgentService gives a local service Consul's AgentService shape; the
// ContentHash is set only where a single service is read, as Consul does.
func (s *Server) toAgentService(svc *catalog.Service) *agentService {
	return &agentService{
		ID: svc.ID, Service: svc.Service, Tags: nonNil(svc.Tags), Meta: nonNilMap(svc.Meta),
		Port: svc.Port, Ports: svc.Ports, Address: svc.Address, SocketPath: svc.SocketPath,
		TaggedAddresses:   svc.TaggedAddresses,
		Weights:           weights{Passing: svc.Weights.Passing, Warning: svc.Weights.Warning},
		EnableTagOverride: svc.EnableTagOverride, Datacenter: s.cfg.Datacenter, Locality: svc.Locality,
	}
}

// nonNil keeps JSON arrays as [] rather than null, as Consul's clients expect.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
