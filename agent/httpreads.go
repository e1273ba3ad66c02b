package agent

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/rpc"
)

// httpReads is the catalog as the HTTP API reads and writes it
// (httpapi.Catalog), with the request's query options: blocking, stale or
// consistent, of any datacenter.
//
// A client sends every read and write to a server of its datacenter over
// RPC (through rpcBackend.call, which keeps to one server and retries a
// read on another), with the options as the client asked them: the server
// forwards to its leader unless ?stale, and to another datacenter for
// ?dc.
//
// A server answers from its own store what its store can answer: a read
// of its own datacenter that is ?stale, or any read while it leads
// (without ?consistent, which needs the leader to confirm it leads). It
// blocks on the store's watches with the request's context, so a client
// that goes away ends the wait. Anything else a clustering server sends to
// its own Catalog endpoint over RPC, which forwards it to the leader or
// another datacenter; a lone server (no RPC port) is always the leader and
// knows no other datacenter.
//
// Its methods may be called from any goroutine.
type httpReads struct {
	dc string
	// call makes a Catalog endpoint call: write says whether it is a
	// write (which a client retries only when it was never sent). Nil on a
	// lone server.
	call func(ctx context.Context, method string, write bool, args, reply any) error
	// server and store are a server's own; nil on a client.
	server *consensus.Server
	store  *catalog.Store
	// limits bound the blocking reads a server answers from its store.
	limits rpc.BlockingLimits
	// cached answers ?cached reads from the agent's DNS cache.
	cached httpCatalog
}

var (
	_ httpapi.Catalog       = (*httpReads)(nil)
	_ httpapi.CachedCatalog = (*httpReads)(nil)
)

// newHTTPReads builds the HTTP API's catalog over the agent's backend.
func (a *Agent) newHTTPReads() (*httpReads, error) {
	h := &httpReads{dc: a.cfg.Datacenter, limits: rpc.DefaultBlockingLimits(), cached: httpCatalog{a.backend, a.dnsSrc}}
	switch b := a.backend.(type) {
	case *rpcBackend:
		h.call = b.call
	case *backend:
		h.server, h.store = b.server, b.store
		if w, ok := b.writer.(*rpcWriter); ok {
			h.call = func(ctx context.Context, method string, _ bool, args, reply any) error {
				return w.pool.Call(ctx, w.addr, method, args, reply)
			}
		}
	default:
		return nil, fmt.Errorf("http api: no catalog for backend %T", a.backend)
	}
	return h, nil
}

func (h *httpReads) CachedServiceInstances(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	return h.cached.CachedServiceInstances(ctx, name, tag)
}

// rpcOptions turns the HTTP API's options into the RPC's.
func rpcOptions(o httpapi.QueryOptions) rpc.QueryOptions {
	return rpc.QueryOptions{
		Datacenter: o.Datacenter, MinQueryIndex: o.MinIndex, MaxQueryTime: o.MaxWait,
		AllowStale: o.AllowStale, RequireConsistent: o.RequireConsistent,
	}
}

func toMeta(m rpc.QueryMeta) httpapi.QueryMeta {
	return httpapi.QueryMeta{Index: m.Index, KnownLeader: m.KnownLeader, LastContact: m.LastContact}
}

// local reports whether a server answers opts from its own store.
func (h *httpReads) local(opts httpapi.QueryOptions) bool {
	if h.store == nil {
		return false
	}
	if h.call == nil {
		return true // a lone server: the leader, of the only datacenter it knows
	}
	if opts.Datacenter != "" && !strings.EqualFold(opts.Datacenter, h.dc) {
		return false
	}
	if opts.RequireConsistent {
		return false
	}
	return opts.AllowStale || h.server.IsLeader()
}

// read answers one read: from the server's store with run, or through
// the Catalog endpoint's method with args (whose QueryOptions the caller
// filled from opts) into meta's reply. run fills in the same reply the
// RPC would and returns its index.
func (h *httpReads) read(ctx context.Context, opts httpapi.QueryOptions, method string, args, reply any, meta *rpc.QueryMeta, run func(ws catalog.WatchSet) (uint64, error)) (httpapi.QueryMeta, error) {
	if !h.local(opts) {
		if h.call == nil {
			return httpapi.QueryMeta{}, fmt.Errorf("datacenter %q: %w", opts.Datacenter, consensus.ErrNoPathToDatacenter)
		}
		if err := h.call(ctx, method, false, args, reply); err != nil {
			return httpapi.QueryMeta{}, err
		}
		return toMeta(*meta), nil
	}
	ro := rpcOptions(opts)
	// The store has never reached the index the client holds (it came from
	// another server, or from before a snapshot was restored): answer at
	// once, as the change feed answers with a Reset, so the client starts
	// over from this store's index instead of waiting for it to catch up.
	if ro.MinQueryIndex > h.store.Index() {
		ro.MinQueryIndex = 0
	}
	if err := consensus.BlockingQuery(ctx, h.limits, ro, meta, run); err != nil {
		return httpapi.QueryMeta{}, err
	}
	meta.KnownLeader = h.server.Leader() != ""
	meta.LastContact = h.server.LastContact()
	return toMeta(*meta), nil
}

func (h *httpReads) Nodes(ctx context.Context, opts httpapi.QueryOptions) ([]*catalog.Node, httpapi.QueryMeta, error) {
	var reply rpc.NodesResponse
	args := &rpc.NodesRequest{QueryOptions: rpcOptions(opts)}
	meta, err := h.read(ctx, opts, rpc.MethodCatalogNodes, args, &reply, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, nodes, err := h.store.Nodes(ws)
		reply.Nodes = nodes
		return idx, err
	})
	return reply.Nodes, meta, err
}

func (h *httpReads) Services(ctx context.Context, opts httpapi.QueryOptions) (map[string][]string, httpapi.QueryMeta, error) {
	var reply rpc.ServicesResponse
	args := &rpc.ServicesRequest{QueryOptions: rpcOptions(opts)}
	meta, err := h.read(ctx, opts, rpc.MethodCatalogServices, args, &reply, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, svcs, err := h.store.Services(ws)
		reply.Services = svcs
		return idx, err
	})
	return reply.Services, meta, err
}

func (h *httpReads) ServiceInstances(ctx context.Context, opts httpapi.QueryOptions, name, tag string) ([]catalog.ServiceInstance, httpapi.QueryMeta, error) {
	var reply rpc.ServiceInstancesResponse
	args := &rpc.ServiceInstancesRequest{QueryOptions: rpcOptions(opts), Service: name, Tag: tag}
	meta, err := h.read(ctx, opts, rpc.MethodCatalogServiceInstances, args, &reply, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, insts, err := h.store.ServiceInstances(ws, name, tag)
		reply.Instances = insts
		return idx, err
	})
	return reply.Instances, meta, err
}

func (h *httpReads) NodeServices(ctx context.Context, opts httpapi.QueryOptions, node string) (*catalog.Node, []*catalog.Service, httpapi.QueryMeta, error) {
	if err := catalog.ValidateNodeName("Node", node); err != nil {
		return nil, nil, httpapi.QueryMeta{}, err
	}
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: rpcOptions(opts), Node: node}
	meta, err := h.read(ctx, opts, rpc.MethodCatalogNodeServices, args, &reply, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		nodeIdx, n, err := h.store.Node(ws, node)
		if err != nil {
			return 0, err
		}
		svcIdx, svcs, err := h.store.NodeServices(ws, node)
		reply.Node, reply.Services = n, svcs
		return max(nodeIdx, svcIdx), err
	})
	return reply.Node, reply.Services, meta, err
}

func (h *httpReads) NodeChecks(ctx context.Context, opts httpapi.QueryOptions, node string) ([]*catalog.Check, httpapi.QueryMeta, error) {
	if err := catalog.ValidateNodeName("Node", node); err != nil {
		return nil, httpapi.QueryMeta{}, err
	}
	args := &rpc.NodeChecksRequest{QueryOptions: rpcOptions(opts), Node: node}
	return h.checks(ctx, opts, rpc.MethodCatalogNodeChecks, args, func(ws catalog.WatchSet) (uint64, []*catalog.Check, error) {
		return h.store.NodeChecks(ws, node)
	})
}

func (h *httpReads) ServiceChecks(ctx context.Context, opts httpapi.QueryOptions, service string) ([]*catalog.Check, httpapi.QueryMeta, error) {
	if r := catalog.ValidLabel(service); r != "" {
		return nil, httpapi.QueryMeta{}, &catalog.FieldError{Field: "Service", Reason: r}
	}
	args := &rpc.ServiceChecksRequest{QueryOptions: rpcOptions(opts), Service: service}
	return h.checks(ctx, opts, rpc.MethodCatalogServiceChecks, args, func(ws catalog.WatchSet) (uint64, []*catalog.Check, error) {
		return h.store.ServiceChecks(ws, service)
	})
}

func (h *httpReads) ChecksInState(ctx context.Context, opts httpapi.QueryOptions, state string) ([]*catalog.Check, httpapi.QueryMeta, error) {
	if err := catalog.ValidateHealthState("State", state); err != nil {
		return nil, httpapi.QueryMeta{}, err
	}
	args := &rpc.ChecksInStateRequest{QueryOptions: rpcOptions(opts), State: state}
	return h.checks(ctx, opts, rpc.MethodCatalogChecksInState, args, func(ws catalog.WatchSet) (uint64, []*catalog.Check, error) {
		return h.store.ChecksInState(ws, catalog.HealthStatus(state))
	})
}

// checks makes a read answered with an rpc.ChecksResponse.
func (h *httpReads) checks(ctx context.Context, opts httpapi.QueryOptions, method string, args any, run func(catalog.WatchSet) (uint64, []*catalog.Check, error)) ([]*catalog.Check, httpapi.QueryMeta, error) {
	var reply rpc.ChecksResponse
	meta, err := h.read(ctx, opts, method, args, &reply, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		idx, cs, err := run(ws)
		reply.Checks = cs
		return idx, err
	})
	return reply.Checks, meta, err
}

// Register writes a registration to the catalog of datacenter dc ("" for
// the agent's).
func (h *httpReads) Register(ctx context.Context, dc string, req *catalog.RegisterRequest) error {
	if h.call != nil {
		args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Registration: *req}
		return h.call(ctx, rpc.MethodCatalogRegister, true, args, nil)
	}
	if err := h.ownDC(dc); err != nil {
		return err
	}
	if req.Datacenter == "" {
		req.Datacenter = h.dc
	} else if !strings.EqualFold(req.Datacenter, h.dc) {
		return &catalog.FieldError{Field: "Datacenter", Reason: fmt.Sprintf("a node of datacenter %q cannot be registered in %q", req.Datacenter, h.dc)}
	}
	return h.server.Register(ctx, req)
}

// Deregister removes a node, service or check from the catalog of
// datacenter dc ("" for the agent's).
func (h *httpReads) Deregister(ctx context.Context, dc string, req *catalog.DeregisterRequest) error {
	if h.call != nil {
		args := &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Deregistration: *req}
		return h.call(ctx, rpc.MethodCatalogDeregister, true, args, nil)
	}
	if err := h.ownDC(dc); err != nil {
		return err
	}
	if err := catalog.ValidateNodeName("Node", req.Node); err != nil {
		return err
	}
	return h.server.Deregister(ctx, req)
}

// ownDC refuses, on a lone server, a write for another datacenter: it is
// in no WAN pool and knows none.
func (h *httpReads) ownDC(dc string) error {
	if dc == "" || strings.EqualFold(dc, h.dc) {
		return nil
	}
	return fmt.Errorf("datacenter %q: %w", dc, consensus.ErrNoPathToDatacenter)
}

// agentVersion is the version GET /v1/agent/self reports: the main
// module's, as the Go toolchain stamped it into the binary ("(devel)" for
// a build from a work tree).
func agentVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// readsWithQueries is the HTTP API's catalog on an agent whose backend
// serves prepared queries: the reads, and the backend's query methods
// (the field is named so that it does not hide Queries.Queries).
type readsWithQueries struct {
	*httpReads
	queries httpapi.Queries
}

var _ httpapi.Queries = readsWithQueries{}

func (r readsWithQueries) ApplyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error) {
	return r.queries.ApplyQuery(ctx, op, q)
}

func (r readsWithQueries) Queries(ctx context.Context, id string) (uint64, []*catalog.PreparedQuery, error) {
	return r.queries.Queries(ctx, id)
}

func (r readsWithQueries) ExecuteQuery(ctx context.Context, dc, idOrName string) (*catalog.QueryResult, error) {
	return r.queries.ExecuteQuery(ctx, dc, idOrName)
}
