package httpapi

import (
	"net/http"
)

// agentSelf is the body of GET /v1/agent/self: the part of Consul's that
// its clients read (Config.NodeName, Config.Datacenter, Member).
type agentSelf struct {
	Config selfConfig
	Member agentMember
}

// selfConfig is the Config section of GET /v1/agent/self.
type selfConfig struct {
	Datacenter        string
	PrimaryDatacenter string
	NodeName          string
	NodeID            string
	Server            bool
	Version           string
	Revision          string
}

func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request) error {
	if err := s.mayReadAgent(r); err != nil {
		return err
	}
	out := agentSelf{
		Config: selfConfig{
			Datacenter: s.cfg.Datacenter, PrimaryDatacenter: s.cfg.Datacenter,
			NodeName: s.cfg.NodeName, NodeID: s.cfg.NodeID, Server: s.cfg.Server,
			Version: s.cfg.Version,
		},
	}
	// The agent is a member of its own LAN pool.
	for _, m := range s.cluster.Members() {
		if m.Name == s.cfg.NodeName {
			out.Member = toAgentMember(m)
		}
	}
	writeJSONPretty(w, r, out)
	return nil
}

// agentServiceGet answers GET /v1/agent/service/<id>: one of the agent's
// own services, 404 when it holds none with that ID.
func (s *Server) agentServiceGet(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if id == "" {
		return badRequest("ID", "is required in the path: /v1/agent/service/<id>")
	}
	services, err := s.readableServices(r)
	if err != nil {
		return err
	}
	for _, svc := range services {
		if svc.ID == id {
			writeJSONPretty(w, r, s.toAgentService(svc))
			return nil
		}
	}
	return notFound("unknown service ID %q", id)
}
