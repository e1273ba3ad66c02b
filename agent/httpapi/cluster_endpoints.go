package httpapi

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/rpc"
)

// Consul's member status numbers (serf.MemberStatus), the values of
// agentMember.Status, and cairn's own 5: a peer refused for its protocol
// version (no member; its "incompatible" tag says why).
const (
	memberNone         = 0
	memberAlive        = 1
	memberLeaving      = 2
	memberLeft         = 3
	memberFailed       = 4
	memberIncompatible = 5
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
	case "incompatible":
		return memberIncompatible
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
	// ClockSkew is cairn's (Consul's clients ignore it): how far a
	// server's wall clock is ahead of this agent's ("-5.002s": behind),
	// left out when this agent has not measured it.
	ClockSkew string `json:",omitempty"`
}

// raftServer is one server as GET /v1/operator/raft/configuration lists it.
type raftServer struct {
	ID              string
	Node            string
	Address         string
	Leader          bool
	ProtocolVersion string
	Voter           bool
	// LastIndex is the last index of the server's Raft log as the
	// leader's autopilot last saw it: the Commit Index `consul operator
	// raft list-peers` shows. 0 when unknown.
	LastIndex uint64
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

// agentMembers lists the LAN pool, or with ?wan the WAN pool (Consul's
// parameter).
func (s *Server) agentMembers(w http.ResponseWriter, r *http.Request) error {
	if seg := r.URL.Query().Get("segment"); seg != "" && seg != allSegments {
		return badRequest("segment", "network segments are not supported: the LAN pool has one segment, got %q", seg)
	}
	authz, err := s.authorizer(r)
	if err != nil {
		return err
	}
	var members []Member
	if boolParam(r, "wan") {
		var err error
		// A client is in no WAN pool: Consul lists no members for it.
		if members, err = s.cluster.WANMembers(); err != nil && !errors.Is(err, ErrNotInWAN) {
			return fmt.Errorf("list WAN members: %w", err)
		}
	} else {
		members = s.cluster.Members()
	}
	out := make([]*agentMember, 0, len(members))
	for _, m := range members {
		// Consul filters members by node:read on their node name.
		if authz == nil || authz.NodeRead(strings.TrimSuffix(m.Name, "."+m.Datacenter)) {
			am := toAgentMember(m)
			out = append(out, &am)
		}
	}
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	slices.SortFunc(out, func(a, b *agentMember) int { return cmp.Compare(a.Name, b.Name) })
	writeJSONPretty(w, r, out)
	return nil
}

// toAgentMember gives m Consul's tags: role ("consul" for a server, "node"
// for a client), dc, vsn, vsn_min, vsn_max, id, build (which `consul
// members` shows as Build up to its ':'), and for a server the RPC port.
// Tags a member does not gossip are left out.
func toAgentMember(m Member) agentMember {
	tags := map[string]string{
		"role": "node",
		"dc":   m.Datacenter,
		"vsn":  strconv.Itoa(int(m.ProtocolVersion)),
	}
	if m.ProtocolMax != 0 {
		tags["vsn_min"], tags["vsn_max"] = strconv.Itoa(int(m.ProtocolMin)), strconv.Itoa(int(m.ProtocolMax))
	}
	if m.ID != "" {
		tags["id"] = m.ID
	}
	if m.Build != "" {
		tags["build"] = m.Build
	}
	if m.Refused != "" {
		tags["incompatible"] = m.Refused
	}
	if m.Role == "server" {
		tags["role"] = "consul"
		if _, port, err := net.SplitHostPort(m.RPCAddr); err == nil && port != "" {
			tags["port"] = port
		}
	}
	return agentMember{Name: m.Name, Addr: m.Addr, Port: m.Port, Tags: tags, Status: memberStatus(m.Status),
		ClockSkew: clockSkew(m.ClockSkew, m.ClockSkewKnown)}
}

// agentJoin joins the LAN pool, or with ?wan the WAN pool, through one
// address.
func (s *Server) agentJoin(w http.ResponseWriter, r *http.Request) error {
	addr := r.PathValue("address")
	switch {
	case addr == "":
		return badRequest("address", "is required in the path: /v1/agent/join/<address>")
	case strings.Contains(addr, "/"):
		return badRequest("address", "must be a host or host:port, got %q", addr)
	}
	join := s.cluster.Join
	if boolParam(r, "wan") {
		join = s.cluster.JoinWAN
	}
	n, err := join(r.Context(), []string{addr})
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

// catalogDatacenters lists the known datacenters as Consul does: a JSON
// array of names.
func (s *Server) catalogDatacenters(w http.ResponseWriter, r *http.Request) error {
	dcs, err := s.cluster.Datacenters(r.Context())
	if err != nil {
		return fmt.Errorf("list datacenters: %w", err)
	}
	if dcs == nil {
		dcs = []string{}
	}
	writeJSONPretty(w, r, dcs)
	return nil
}

func (s *Server) agentLeave(w http.ResponseWriter, r *http.Request) error {
	// Making an agent leave takes it out of the cluster (a server out of
	// the Raft configuration): agent:write on it (its route's Need) and
	// operator:write.
	if err := s.mayWriteOperator(r); err != nil {
		return err
	}
	if err := s.cluster.Leave(r.Context()); err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// agentForceLeave answers PUT /v1/agent/force-leave/<node>[?prune][?wan]
// (operator:write, as Consul's): a failed member is made to have left, so
// nobody reconnects to it and the leader deregisters its node.
func (s *Server) agentForceLeave(w http.ResponseWriter, r *http.Request) error {
	node := r.PathValue("node")
	if node == "" {
		return badRequest("node", "is required in the path: /v1/agent/force-leave/<node>")
	}
	if err := s.cluster.ForceLeave(r.Context(), node, boolParam(r, "prune"), boolParam(r, "wan")); err != nil {
		return fmt.Errorf("force-leave %s: %w", node, err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) operatorRaftConfiguration(w http.ResponseWriter, r *http.Request) error {
	cfg, err := s.raftConfiguration(r.Context(), dcParam(r, "")) // catalog_endpoints.go
	if err != nil {
		return fmt.Errorf("read raft configuration: %w", err)
	}
	out := raftConfiguration{Servers: []raftServer{}}
	if cfg != nil {
		out.Index = cfg.Index
		last := s.lastIndexes(r)
		for _, srv := range cfg.Servers {
			out.Servers = append(out.Servers, raftServer{
				ID: srv.ID, Node: cmp.Or(srv.Node, srv.ID), Address: srv.Address,
				Leader: srv.Leader, ProtocolVersion: raftProtocolVersion, Voter: srv.Voter,
				LastIndex: last[srv.ID],
			})
		}
	}
	writeJSONPretty(w, r, out)
	return nil
}

// lastIndexes maps the Raft ID of each server of the agent's datacenter
// to the last index of its log, as the leader's autopilot last saw it (as
// Consul fills RaftServer.LastIndex); nil when that is not known (no
// leader to ask: the configuration is answered all the same).
func (s *Server) lastIndexes(r *http.Request) map[string]uint64 {
	health, err := s.serverHealth(r.Context(), "") // autopilot_endpoint.go
	if err != nil {
		s.logger.Debug("raft configuration without the servers' last indexes", "err", err)
		return nil
	}
	out := make(map[string]uint64, len(health.Servers))
	for _, h := range health.Servers {
		out[h.ID] = h.LastIndex
	}
	return out
}

// operatorRaftPeer serves DELETE /v1/operator/raft/peer?id=|?address=, as
// Consul's: the leader removes that server from the Raft configuration.
func (s *Server) operatorRaftPeer(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	_, hasID := q["id"]
	_, hasAddr := q["address"]
	switch {
	case !hasID && !hasAddr:
		return badRequest("id", "give ?id with the server's Raft ID or ?address with its IP:port")
	case hasID && hasAddr:
		return badRequest("id", "give only one of ?id and ?address")
	}
	args := &rpc.RaftRemovePeerRequest{WriteRequest: rpc.WriteRequest{Datacenter: q.Get("dc")}, ID: q.Get("id"), Address: q.Get("address")}
	if err := s.door.RPC(r.Context(), rpc.MethodOperatorRaftRemovePeer, args, &rpc.RaftRemovePeerResponse{}); err != nil {
		return fmt.Errorf("remove raft peer: %w", err)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// transferLeader is the body of POST /v1/operator/raft/transfer-leader.
type transferLeader struct {
	Success bool
}

// operatorRaftTransferLeader serves POST
// /v1/operator/raft/transfer-leader[?id=], as Consul's: the leader hands
// leadership to the voter id, or to the one Raft picks.
func (s *Server) operatorRaftTransferLeader(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	args := &rpc.RaftTransferLeaderRequest{WriteRequest: rpc.WriteRequest{Datacenter: q.Get("dc")}, ID: q.Get("id")}
	var reply rpc.RaftTransferLeaderResponse
	if err := s.door.RPC(r.Context(), rpc.MethodOperatorRaftTransferLeader, args, &reply); err != nil {
		return fmt.Errorf("transfer raft leadership: %w", err)
	}
	writeJSONPretty(w, r, transferLeader{Success: reply.Success})
	return nil
}
