package httpapi

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Consul's member status numbers (serf.MemberStatus), the values of
// agentMember.Status.
const (
	memberNone    = 0
	memberAlive   = 1
	memberLeaving = 2
	memberLeft    = 3
	memberFailed  = 4
)

// memberStatus maps Member.Status to Consul's number; an unknown status is
// "none".
func memberStatus(status string) int {
	switch status {
	case "alive":
		return memberAlive
	case "leaving":
		return memberLeaving
	case "left":
		return memberLeft
	case "failed":
		return memberFailed
	}
	return memberNone
}

// agentMember is one member as GET /v1/agent/members lists it (Consul's
// AgentMember without the serf protocol ranges, which cairn does not have).
type agentMember struct {
	Name   string
	Addr   string
	Port   uint16
	Tags   map[string]string
	Status int
}

// raftServer is one server as GET /v1/operator/raft/configuration lists it.
type raftServer struct {
	ID              string
	Node            string
	Address         string
	Leader          bool
	ProtocolVersion string
	Voter           bool
}

// raftConfiguration is the body of GET /v1/operator/raft/configuration.
type raftConfiguration struct {
	Servers []raftServer
	Index   uint64
}

// raftProtocolVersion is the Raft protocol version cairn's servers speak
// (hashicorp/raft's 3: servers have IDs apart from their addresses).
const raftProtocolVersion = "3"

// allSegments is Consul's ?segment value for every segment of the LAN pool.
const allSegments = "_all"

// rejectWAN answers ?wan, which asks for the WAN pool: it is not served
// here yet.
func rejectWAN(r *http.Request) error {
	if boolParam(r, "wan") {
		return badRequest("wan", "the WAN pool is not available on this agent yet; leave out wan to use the LAN pool")
	}
	return nil
}

func (s *Server) agentMembers(w http.ResponseWriter, r *http.Request) error {
	if err := rejectWAN(r); err != nil {
		return err
	}
	if seg := r.URL.Query().Get("segment"); seg != "" && seg != allSegments {
		return badRequest("segment", "network segments are not supported: the LAN pool has one segment, got %q", seg)
	}
	members := s.cluster.Members()
	out := make([]agentMember, 0, len(members))
	for _, m := range members {
		out = append(out, toAgentMember(m))
	}
	slices.SortFunc(out, func(a, b agentMember) int { return cmp.Compare(a.Name, b.Name) })
	writeJSONPretty(w, r, out)
	return nil
}

// toAgentMember gives m Consul's tags: role ("consul" for a server, "node"
// for a client), dc, vsn, and for a server the RPC port.
func toAgentMember(m Member) agentMember {
	tags := map[string]string{
		"role": "node",
		"dc":   m.Datacenter,
		"vsn":  strconv.Itoa(int(m.ProtocolVersion)),
	}
	if m.Role == "server" {
		tags["role"] = "consul"
		if _, port, err := net.SplitHostPort(m.RPCAddr); err == nil && port != "" {
			tags["port"] = port
		}
	}
	return agentMember{Name: m.Name, Addr: m.Addr, Port: m.Port, Tags: tags, Status: memberStatus(m.Status)}
}

func (s *Server) agentJoin(w http.ResponseWriter, r *http.Request) error {
	if err := rejectWAN(r); err != nil {
		return err
	}
	addr := r.PathValue("address")
	switch {
	case addr == "":
		return badRequest("address", "is required in the path: /v1/agent/join/<address>")
	case strings.Contains(addr, "/"):
		return badRequest("address", "must be a host or host:port, got %q", addr)
	}
	n, err := s.cluster.Join(r.Context(), []string{addr})
	// Joining through one agent is enough: gossip spreads the rest.
	if n > 0 {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if err != nil {
		return fmt.Errorf("join %s: %w", addr, err)
	}
	return fmt.Errorf("join %s: no agent answered", addr)
}

func (s *Server) agentLeave(w http.ResponseWriter, r *http.Request) error {
	if err := s.cluster.Leave(r.Context()); err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) operatorRaftConfiguration(w http.ResponseWriter, r *http.Request) error {
	cfg, err := s.cluster.RaftConfiguration(r.Context())
	if err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	out := raftConfiguration{Servers: []raftServer{}}
	if cfg != nil {
		out.Index = cfg.Index
		for _, srv := range cfg.Servers {
			// cairn's Raft IDs are node names.
			out.Servers = append(out.Servers, raftServer{
				ID: srv.ID, Node: srv.ID, Address: srv.Address,
				Leader: srv.Leader, ProtocolVersion: raftProtocolVersion, Voter: srv.Voter,
			})
		}
	}
	writeJSONPretty(w, r, out)
	return nil
}
