package httpapi

import (
	"net/http"
)

// agentSelf is the body of GET /v1/agent/self: the part of Consul's that
// its clients read (Config.NodeName, Config.Datacenter, Member, and the
// Stats `consul info` prints).
type agentSelf struct {
	Config      selfConfig
	DebugConfig selfDebugConfig
	Member      agentMember
	Stats       map[string]map[string]string `json:",omitempty"`
}

// selfDebugConfig is the part of Consul's DebugConfig section that tools
// read: the DNS domain.
type selfDebugConfig struct {
	DNSDomain string
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
	out := agentSelf{
		Config: selfConfig{
			Datacenter: s.cfg.Datacenter, PrimaryDatacenter: s.cfg.Datacenter,
			NodeName: s.cfg.NodeName, NodeID: s.cfg.NodeID, Server: s.cfg.Server,
			Version: s.cfg.Version,
		},
		DebugConfig: selfDebugConfig{DNSDomain: s.cfg.Domain},
	}
	out.Stats = s.selfStats()
	// The agent is a member of its own LAN pool.
	for _, m := range s.cluster.Members() {
		if m.Name == s.cfg.NodeName {
			out.Member = toAgentMember(m)
		}
	}
	writeJSONPretty(w, r, out)
	return nil
}

// agentReload answers PUT /v1/agent/reload: the agent re-reads its
// configuration and applies what can change while it runs. It needs
// agent:write, as Consul's. A bad configuration is a 400 naming the field,
// and the agent keeps the one it runs with.
func (s *Server) agentReload(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Reload == nil {
		return notFound("reload is not available on this agent")
	}
	if err := s.deps.Reload(); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
