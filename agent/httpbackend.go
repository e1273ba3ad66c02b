package agent

import (
	"context"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/dnssource"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/rpc"
)

// httpBackend is the catalog as the HTTP API reads and writes it: every
// read and write goes through the door with the request's options
// (?dc, ?stale, ?consistent, blocking ?index&wait), so the server's
// endpoint decides, the same on every agent, whether it answers from its
// own state, forwards to the leader or to another datacenter. The
// request's context ends a blocking read when the HTTP client goes away.
// ?cached service reads are answered from the agent's DNS cache.
//
// Its methods may be called from any goroutine.
type httpBackend struct {
	door door.Door
	dc   string
	node string // the agent's node, which prepared queries' Near "_agent" means
	dns  *dnssource.Source
	// cacheToken is the token the DNS cache reads with (acl.tokens.dns,
	// else acl.tokens.default): a ?cached read made with another token
	// (defaultToken when it carries none) is answered by the servers
	// instead, since the cache holds what that token may read, not the
	// request's.
	cacheToken, defaultToken string
}

var (
	_ httpapi.Catalog       = httpBackend{}
	_ httpapi.CachedCatalog = httpBackend{}
	_ httpapi.Queries       = httpBackend{}
	_ httpapi.Status        = httpBackend{}
)

// rpcOptions turns the HTTP API's options into the RPC's.
func rpcOptions(o httpapi.QueryOptions) rpc.QueryOptions {
	return rpc.QueryOptions{
		Datacenter: o.Datacenter, MinQueryIndex: o.MinIndex, MaxQueryTime: o.MaxWait,
		AllowStale: o.AllowStale, RequireConsistent: o.RequireConsistent,
	}
}

func toMeta(m rpc.QueryMeta) httpapi.QueryMeta {
	return httpapi.QueryMeta{Index: m.Index, KnownLeader: m.KnownLeader, LastContact: m.LastContact, ResultsFilteredByACLs: m.ResultsFilteredByACLs}
}

func (h httpBackend) Nodes(ctx context.Context, opts httpapi.QueryOptions) ([]*catalog.Node, httpapi.QueryMeta, error) {
	var reply rpc.NodesResponse
	err := h.door.RPC(ctx, rpc.MethodCatalogNodes, &rpc.NodesRequest{QueryOptions: rpcOptions(opts), Near: opts.Near}, &reply)
	return reply.Nodes, toMeta(reply.QueryMeta), err
}

func (h httpBackend) Services(ctx context.Context, opts httpapi.QueryOptions) (map[string][]string, httpapi.QueryMeta, error) {
	var reply rpc.ServicesResponse
	err := h.door.RPC(ctx, rpc.MethodCatalogServices, &rpc.ServicesRequest{QueryOptions: rpcOptions(opts)}, &reply)
	return reply.Services, toMeta(reply.QueryMeta), err
}

func (h httpBackend) ServiceNodes(ctx context.Context, opts httpapi.QueryOptions) ([]catalog.ServiceInstance, httpapi.QueryMeta, error) {
	var reply rpc.ServicesResponse
	err := h.door.RPC(ctx, rpc.MethodCatalogServices, &rpc.ServicesRequest{QueryOptions: rpcOptions(opts), Instances: true}, &reply)
	return reply.Instances, toMeta(reply.QueryMeta), err
}

func (h httpBackend) ServiceInstances(ctx context.Context, opts httpapi.QueryOptions, name, tag string) ([]catalog.ServiceInstance, httpapi.QueryMeta, error) {
	var reply rpc.ServiceInstancesResponse
	args := &rpc.ServiceInstancesRequest{QueryOptions: rpcOptions(opts), Service: name, Tag: tag, Near: opts.Near}
	err := h.door.RPC(ctx, rpc.MethodCatalogServiceInstances, args, &reply)
	return reply.Instances, toMeta(reply.QueryMeta), err
}

func (h httpBackend) NodeServices(ctx context.Context, opts httpapi.QueryOptions, node string) (*catalog.Node, []*catalog.Service, httpapi.QueryMeta, error) {
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: rpcOptions(opts), Node: node}
	err := h.door.RPC(ctx, rpc.MethodCatalogNodeServices, args, &reply)
	return reply.Node, reply.Services, toMeta(reply.QueryMeta), err
}

func (h httpBackend) NodeChecks(ctx context.Context, opts httpapi.QueryOptions, node string) ([]*catalog.Check, httpapi.QueryMeta, error) {
	return h.checks(ctx, rpc.MethodCatalogNodeChecks, &rpc.NodeChecksRequest{QueryOptions: rpcOptions(opts), Node: node})
}

func (h httpBackend) ServiceChecks(ctx context.Context, opts httpapi.QueryOptions, service string) ([]*catalog.Check, httpapi.QueryMeta, error) {
	return h.checks(ctx, rpc.MethodCatalogServiceChecks, &rpc.ServiceChecksRequest{QueryOptions: rpcOptions(opts), Service: service})
}

func (h httpBackend) ChecksInState(ctx context.Context, opts httpapi.QueryOptions, state string) ([]*catalog.Check, httpapi.QueryMeta, error) {
	return h.checks(ctx, rpc.MethodCatalogChecksInState, &rpc.ChecksInStateRequest{QueryOptions: rpcOptions(opts), State: state})
}

// checks makes a read answered with an rpc.ChecksResponse.
func (h httpBackend) checks(ctx context.Context, method string, args any) ([]*catalog.Check, httpapi.QueryMeta, error) {
	var reply rpc.ChecksResponse
	err := h.door.RPC(ctx, method, args, &reply)
	return reply.Checks, toMeta(reply.QueryMeta), err
}

// Register writes a registration to the catalog of datacenter dc ("" for
// the agent's).
func (h httpBackend) Register(ctx context.Context, dc string, req *catalog.RegisterRequest) error {
	args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Registration: *req}
	return h.door.RPC(ctx, rpc.MethodCatalogRegister, args, nil)
}

// Deregister removes a node, service or check from the catalog of
// datacenter dc ("" for the agent's).
func (h httpBackend) Deregister(ctx context.Context, dc string, req *catalog.DeregisterRequest) error {
	args := &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Deregistration: *req}
	return h.door.RPC(ctx, rpc.MethodCatalogDeregister, args, nil)
}

func (h httpBackend) CachedServiceInstances(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	tok := acl.TokenFromContext(ctx)
	if tok == "" {
		tok = h.defaultToken
	}
	if tok != h.cacheToken {
		all, meta, err := h.ServiceInstances(ctx, httpapi.QueryOptions{AllowStale: true}, name, tag)
		return meta.Index, all, false, 0, err
	}
	return h.dns.CachedInstances(ctx, name, tag)
}

// statusTimeout bounds the Status calls when the caller set no deadline.
const statusTimeout = 5 * time.Second

// Leader returns the leader's address as a server of this datacenter
// sees it ("" when it knows none).
func (h httpBackend) Leader(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.LeaderResponse
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: h.dc, AllowStale: true}}
	if err := h.door.RPC(ctx, rpc.MethodStatusLeader, args, &reply); err != nil {
		return "", err
	}
	return reply.Leader, nil
}

// Peers returns the Raft addresses of the servers of the datacenter.
func (h httpBackend) Peers(ctx context.Context) ([]string, error) {
	cfg, err := raftConfiguration(ctx, h.door, h.dc)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		out = append(out, s.Address)
	}
	return out, nil
}

// raftConfiguration returns the Raft configuration a server of dc holds.
func raftConfiguration(ctx context.Context, d door.Door, dc string) (*rpc.RaftConfigurationResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.RaftConfigurationResponse
	args := &rpc.StatusRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: true}}
	if err := d.RPC(ctx, rpc.MethodStatusRaftConfiguration, args, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

func (h httpBackend) ApplyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error) {
	var reply rpc.PreparedQueryApplyResponse
	args := &rpc.PreparedQueryApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: h.dc}, Op: op, Query: *q}
	if err := h.door.RPC(ctx, rpc.MethodPreparedQueryApply, args, &reply); err != nil {
		return "", err
	}
	return reply.ID, nil
}

// Queries reads from the leader (not stale), so that a query just defined
// through this agent is found.
func (h httpBackend) Queries(ctx context.Context, id string) (uint64, []*catalog.PreparedQuery, error) {
	var reply rpc.PreparedQueriesResponse
	opts := rpc.QueryOptions{Datacenter: h.dc}
	var err error
	if id != "" {
		err = h.door.RPC(ctx, rpc.MethodPreparedQueryGet, &rpc.PreparedQueryGetRequest{QueryOptions: opts, QueryID: id}, &reply)
	} else {
		err = h.door.RPC(ctx, rpc.MethodPreparedQueryList, &rpc.PreparedQueryListRequest{QueryOptions: opts}, &reply)
	}
	if err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Queries, nil
}

// ExecuteQuery answers the HTTP API from the leader's state, as Queries
// does.
func (h httpBackend) ExecuteQuery(ctx context.Context, dc, idOrName string) (*catalog.QueryResult, error) {
	return executeQuery(ctx, h.door, dc, idOrName, h.node, false)
}

// executeQuery runs a prepared query in datacenter dc ("" for the
// agent's); stale lets any server answer.
func executeQuery(ctx context.Context, d door.Door, dc, idOrName, node string, stale bool) (*catalog.QueryResult, error) {
	var reply rpc.PreparedQueryExecuteResponse
	args := &rpc.PreparedQueryExecuteRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: stale}, QueryIDOrName: idOrName, Agent: node}
	if err := d.RPC(ctx, rpc.MethodPreparedQueryExecute, args, &reply); err != nil {
		return nil, err
	}
	return &reply.Result, nil
}

// dnsAsker answers the web UI's DNS questions through the agent's own DNS
// server.
type dnsAsker struct{ dns *resolver.Server }

var (
	_ httpapi.DNSAsker = dnsAsker{}
	_ httpapi.DNSWire  = (*resolver.Server)(nil) // DNS over HTTPS
)

func (d dnsAsker) AskDNS(name, qtype string) (httpapi.DNSReply, error) {
	r, err := d.dns.Ask(name, qtype)
	return httpapi.DNSReply{Rcode: r.Rcode, Answer: r.Answer, Extra: r.Extra}, err
}
