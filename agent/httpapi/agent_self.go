package httpapi

import (
	"cmp"
	"net"
	"net/http"
	"strconv"

	"github.com/cairndns/cairn/internal/buildinfo"
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

// selfDebugConfig is the part of Consul's DebugConfig section that its
// clients read: the DNS domain (the web UI), EnableDebug and ACLsEnabled
// (`consul debug` refuses an agent without the keys) and the gossip addresses (Consul's
// tests join an agent to itself through SerfAdvertiseAddrLAN), in
// Consul's "tcp://ip:port" form; SerfAdvertiseAddrWAN only on a server.
type selfDebugConfig struct {
	Datacenter           string
	NodeName             string
	NodeID               string
	ServerMode           bool
	DNSDomain            string
	EnableDebug          bool
	ACLsEnabled          bool
	SerfAdvertiseAddrLAN string
	SerfAdvertiseAddrWAN string `json:",omitempty"`
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
	BuildDate         string
	// Ours: whether the tree the binary was built from was modified, and
	// the cairn protocol it speaks and the range it accepts.
	Dirty                                     bool
	ProtocolVersion, ProtocolMin, ProtocolMax uint8
}

func (s *Server) agentSelf(w http.ResponseWriter, r *http.Request) error {
	out := agentSelf{
		Config: selfConfig{
			Datacenter: s.cfg.Datacenter, PrimaryDatacenter: cmp.Or(s.cfg.PrimaryDatacenter, s.cfg.Datacenter),
			NodeName: s.cfg.NodeName, NodeID: s.cfg.NodeID, Server: s.cfg.Server,
			Version: s.cfg.Version, Revision: buildinfo.Revision(), BuildDate: buildinfo.BuildDate(), Dirty: buildinfo.Read().Dirty,
			ProtocolVersion: buildinfo.Protocol, ProtocolMin: buildinfo.ProtocolMin, ProtocolMax: buildinfo.ProtocolMax,
		},
		DebugConfig: selfDebugConfig{Datacenter: s.cfg.Datacenter, NodeName: s.cfg.NodeName, NodeID: s.cfg.NodeID,
			ServerMode: s.cfg.Server, DNSDomain: s.cfg.Domain, EnableDebug: s.cfg.EnableDebug, ACLsEnabled: s.cfg.ACLsEnabled},
	}
	out.Stats = s.selfStats()
	// The agent is a member of its own LAN pool.
	for _, m := range s.cluster.Members() {
		if m.Name == s.cfg.NodeName && m.Status != "incompatible" {
			out.Member = toAgentMember(m)
			out.DebugConfig.SerfAdvertiseAddrLAN = serfAddr(m)
		}
	}
	if wan, err := s.cluster.WANMembers(); err == nil {
		for _, m := range wan {
			if m.Name == s.cfg.NodeName+"."+s.cfg.Datacenter && m.Status != "incompatible" {
				out.DebugConfig.SerfAdvertiseAddrWAN = serfAddr(m)
			}
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

// serfAddr is a member's gossip address as Consul's DebugConfig writes it.
func serfAddr(m Member) string {
	return "tcp://" + net.JoinHostPort(m.Addr, strconv.Itoa(int(m.Port)))
}
