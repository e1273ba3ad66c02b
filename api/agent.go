package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Agent is the group of /v1/agent endpoints: the services of the agent the
// client talks to.
type Agent struct{ c *Client }

// ServiceRegister registers (or replaces) a service on the local agent:
// PUT /v1/agent/service/register. The agent validates it; a rejected field
// comes back as a *StatusError with Field and Reason set.
func (a *Agent) ServiceRegister(ctx context.Context, reg *AgentServiceRegistration) error {
	if reg == nil {
		return errors.New("register service: registration is nil")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/service/register",
		body:   reg,
	}, nil)
	return err
}

// ServiceDeregister removes the service with the given ID from the local
// agent: PUT /v1/agent/service/deregister/<id>.
func (a *Agent) ServiceDeregister(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("deregister service: service ID is empty")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/service/deregister/" + url.PathEscape(id),
	}, nil)
	return err
}

// Services lists the services registered on the local agent, keyed by
// service ID: GET /v1/agent/services.
func (a *Agent) Services(ctx context.Context) (map[string]*AgentService, error) {
	var out map[string]*AgentService
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/agent/services"}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]*AgentService{}
	}
	return out, nil
}

// agentMember is a member as the agent sends it: Consul's shape, with the
// status as serf's number.
type agentMember struct {
	Name      string
	Addr      string
	Port      uint16
	Tags      map[string]string
	Status    int
	ClockSkew *Duration
}

// memberStatuses names Consul's member status numbers.
var memberStatuses = [...]string{MemberNone, MemberAlive, MemberLeaving, MemberLeft, MemberFailed, MemberIncompatible}

func (m agentMember) toMember() Member {
	status := "unknown"
	if m.Status >= 0 && m.Status < len(memberStatuses) {
		status = memberStatuses[m.Status]
	}
	role := RoleClient
	if m.Tags["role"] == "consul" {
		role = RoleServer
	}
	tags := m.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	return Member{
		Name: m.Name, Addr: m.Addr, Port: m.Port, Status: status, Role: role,
		Datacenter: tags["dc"], Tags: tags, ClockSkew: m.ClockSkew,
	}
}

// Members lists the members of the agent's LAN gossip pool, itself
// included, in the order the agent sends them: GET /v1/agent/members.
// Gossip is eventually consistent, so two agents may disagree for a
// moment; the catalog's nodes are the consistent view.
func (a *Agent) Members(ctx context.Context) ([]Member, error) {
	return a.members(ctx, nil)
}

// MembersWAN lists the members of the WAN gossip pool the agent (a
// server) is in: the servers of every datacenter, named "<node>.<dc>":
// GET /v1/agent/members?wan=1. A client agent, in no WAN pool, lists
// none, as Consul's.
func (a *Agent) MembersWAN(ctx context.Context) ([]Member, error) {
	return a.members(ctx, url.Values{"wan": {"1"}})
}

func (a *Agent) members(ctx context.Context, query url.Values) ([]Member, error) {
	var raw []agentMember
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/agent/members", query: query}, &raw); err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(raw))
	for _, m := range raw {
		out = append(out, m.toMember())
	}
	return out, nil
}

// Join asks the agent to join the LAN gossip pool of the agent at addr
// ("host", meaning the agent's own gossip port, or "host:port"):
// PUT /v1/agent/join/<addr>. An agent that could not join addr answers
// with a 500, returned as a *StatusError.
func (a *Agent) Join(ctx context.Context, addr string) error {
	return a.join(ctx, addr, nil)
}

// JoinWAN asks the agent (a server) to join the WAN gossip pool of the
// server at addr ("host", meaning the agent's own WAN port, or
// "host:port"): PUT /v1/agent/join/<addr>?wan=1. A client agent answers
// 400, and one that could not join addr 500, each returned as a
// *StatusError.
func (a *Agent) JoinWAN(ctx context.Context, addr string) error {
	return a.join(ctx, addr, url.Values{"wan": {"1"}})
}

func (a *Agent) join(ctx context.Context, addr string, query url.Values) error {
	if addr == "" {
		return errors.New("join: address is empty")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/join/" + url.PathEscape(addr),
		query:  query,
	}, nil)
	return err
}

// Reload asks the agent to read its configuration again and apply what
// can change while it runs (log_level, the TLS certificates): PUT
// /v1/agent/reload. A bad configuration is an error naming the field, and
// the agent keeps the one it runs with.
func (a *Agent) Reload(ctx context.Context) error {
	_, err := a.c.do(ctx, request{method: http.MethodPut, path: "/v1/agent/reload"}, nil)
	return err
}

// Leave asks the agent to leave the cluster gracefully and then shut down:
// PUT /v1/agent/leave. It returns once the leave has been broadcast; the
// agent stops after answering.
func (a *Agent) Leave(ctx context.Context) error {
	_, err := a.c.do(ctx, request{method: http.MethodPut, path: "/v1/agent/leave"}, nil)
	return err
}

// ForceLeaveOptions are the choices of ForceLeave.
type ForceLeaveOptions struct {
	// Prune forgets the member at once instead of keeping it as left
	// for a while.
	Prune bool
	// WAN acts on the WAN pool (the agent must be a server), where
	// members are named "<node>.<dc>".
	WAN bool
}

// ForceLeave makes the failed member node leave the gossip pool, so no
// agent tries to reach it again and its node leaves the catalog: PUT
// /v1/agent/force-leave/<node>. An alive or unknown member is left
// alone. It needs operator:write.
func (a *Agent) ForceLeave(ctx context.Context, node string, opts ForceLeaveOptions) error {
	if node == "" {
		return errors.New("force-leave: node name is empty")
	}
	q := url.Values{}
	if opts.Prune {
		q.Set("prune", "1")
	}
	if opts.WAN {
		q.Set("wan", "1")
	}
	_, err := a.c.do(ctx, request{method: http.MethodPut, path: "/v1/agent/force-leave/" + url.PathEscape(node), query: q}, nil)
	return err
}

// Self describes the agent: GET /v1/agent/self.
func (a *Agent) Self(ctx context.Context) (*AgentSelf, error) {
	var out AgentSelf
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/agent/self"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Service returns one of the agent's own services by ID: GET
// /v1/agent/service/<id>. An unknown ID is a *StatusError with Code 404.
func (a *Agent) Service(ctx context.Context, id string) (*AgentService, error) {
	if id == "" {
		return nil, errors.New("agent service: service ID is empty")
	}
	var out AgentService
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/agent/service/" + url.PathEscape(id)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
