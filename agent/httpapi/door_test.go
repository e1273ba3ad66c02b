package httpapi_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// The handlers call the servers through httpapi.Door with the rpc
// package's types. The tests' fakes answer in the terms of each family
// (nodes, KV entries, sessions…): fakeDoor turns each call into a call of
// the fake that answers that family, as a server's endpoint would.

// queryOpts is what a fake read is asked with: the request's options and
// its ?near.
type queryOpts struct {
	Datacenter        string
	MinIndex          uint64
	MaxWait           time.Duration
	AllowStale        bool
	RequireConsistent bool
	Near              string
}

// queryMeta is what a fake read answers with.
type queryMeta struct {
	Index                 uint64
	KnownLeader           bool
	LastContact           time.Duration
	ResultsFilteredByACLs bool
}

func optsOf(o rpc.QueryOptions, near string) queryOpts {
	return queryOpts{Datacenter: o.Datacenter, MinIndex: o.MinQueryIndex, MaxWait: o.MaxQueryTime,
		AllowStale: o.AllowStale, RequireConsistent: o.RequireConsistent, Near: near}
}

func (m queryMeta) rpc() rpc.QueryMeta {
	return rpc.QueryMeta{Index: m.Index, KnownLeader: m.KnownLeader, LastContact: m.LastContact, ResultsFilteredByACLs: m.ResultsFilteredByACLs}
}

// The families a fake may answer.
type (
	catalogBackend interface {
		Nodes(ctx context.Context, opts queryOpts) ([]*catalog.Node, queryMeta, error)
		Services(ctx context.Context, opts queryOpts) (map[string][]string, queryMeta, error)
		ServiceNodes(ctx context.Context, opts queryOpts) ([]catalog.ServiceInstance, queryMeta, error)
		ServiceInstances(ctx context.Context, opts queryOpts, name, tag string) ([]catalog.ServiceInstance, queryMeta, error)
		NodeServices(ctx context.Context, opts queryOpts, node string) (*catalog.Node, []*catalog.Service, queryMeta, error)
		NodeChecks(ctx context.Context, opts queryOpts, node string) ([]*catalog.Check, queryMeta, error)
		ServiceChecks(ctx context.Context, opts queryOpts, service string) ([]*catalog.Check, queryMeta, error)
		ChecksInState(ctx context.Context, opts queryOpts, state string) ([]*catalog.Check, queryMeta, error)
		Register(ctx context.Context, dc string, req *catalog.RegisterRequest) error
		Deregister(ctx context.Context, dc string, req *catalog.DeregisterRequest) error
	}
	leaderBackend interface {
		Leader(ctx context.Context) (string, error)
	}
	raftBackend interface {
		RaftConfiguration(ctx context.Context) (*rpc.RaftConfigurationResponse, error)
	}
	kvBackend interface {
		KVGet(ctx context.Context, opts queryOpts, key string) (*catalog.KVEntry, queryMeta, error)
		KVList(ctx context.Context, opts queryOpts, prefix string) ([]*catalog.KVEntry, queryMeta, error)
		KVKeys(ctx context.Context, opts queryOpts, prefix, separator string) ([]string, queryMeta, error)
		KVApply(ctx context.Context, dc string, op catalog.KVOp, e *catalog.KVEntry) (bool, error)
	}
	sessionBackend interface {
		SessionCreate(ctx context.Context, dc string, s *catalog.Session) (string, error)
		SessionDestroy(ctx context.Context, dc, id string) error
		SessionRenew(ctx context.Context, dc, id string) (*catalog.Session, error)
		SessionInfo(ctx context.Context, opts queryOpts, id string) (*catalog.Session, queryMeta, error)
		SessionList(ctx context.Context, opts queryOpts, node string) ([]*catalog.Session, queryMeta, error)
	}
	txnBackend interface {
		TxnApply(ctx context.Context, dc string, req *catalog.TxnRequest) (*catalog.TxnResponse, error)
		TxnRead(ctx context.Context, opts queryOpts, req *catalog.TxnRequest) (*catalog.TxnResponse, queryMeta, error)
	}
	queryBackend interface {
		ApplyQuery(ctx context.Context, op catalog.QueryOp, q *catalog.PreparedQuery) (string, error)
		Queries(ctx context.Context, id string) (uint64, []*catalog.PreparedQuery, error)
		ExecuteQuery(ctx context.Context, dc, idOrName string) (*catalog.QueryResult, error)
	}
	coordinateBackend interface {
		CoordinateNodes(ctx context.Context, opts queryOpts) ([]*catalog.CoordinateEntry, queryMeta, error)
		CoordinateNode(ctx context.Context, opts queryOpts, node string) ([]*catalog.CoordinateEntry, queryMeta, error)
		CoordinateDatacenters(ctx context.Context) ([]rpc.DatacenterCoordinates, error)
		CoordinateUpdate(ctx context.Context, dc, node string, c *catalog.Coordinate) error
	}
	autopilotBackend interface {
		AutopilotConfiguration(ctx context.Context, dc string, stale bool) (*rpc.AutopilotConfig, error)
		SetAutopilotConfiguration(ctx context.Context, dc string, cfg rpc.AutopilotConfig, cas bool) (bool, error)
		ServerHealth(ctx context.Context, dc string) (*rpc.ServerHealthResponse, error)
	}
	snapshotBackend interface {
		SaveSnapshot(ctx context.Context, dc string, stale bool) ([]byte, uint64, error)
		AuthorizeRestore(ctx context.Context, dc string) error
		RestoreSnapshot(ctx context.Context, dc string, archive []byte) (uint64, error)
	}
)

// fakeDoor is an httpapi.Door answered by the first of its backends that
// answers the method's family; a method none answers is an error.
type fakeDoor struct{ backends []any }

var _ httpapi.Door = fakeDoor{}

// backend returns the first backend of type T.
func backend[T any](d fakeDoor, method string) (T, error) {
	for _, b := range d.backends {
		if t, ok := b.(T); ok {
			return t, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("fake door: nothing answers %s", method)
}

func (d fakeDoor) RPC(ctx context.Context, method string, args, reply any) error {
	switch method {
	case rpc.MethodCatalogNodes, rpc.MethodCatalogServices, rpc.MethodCatalogServiceInstances, rpc.MethodCatalogNodeServices,
		rpc.MethodCatalogNodeChecks, rpc.MethodCatalogServiceChecks, rpc.MethodCatalogChecksInState,
		rpc.MethodCatalogRegister, rpc.MethodCatalogDeregister:
		b, err := backend[catalogBackend](d, method)
		if err != nil {
			return err
		}
		return catalogRPC(ctx, b, method, args, reply)
	case rpc.MethodStatusLeader:
		b, err := backend[leaderBackend](d, method)
		if err != nil {
			return err
		}
		leader, err := b.Leader(ctx)
		reply.(*rpc.LeaderResponse).Leader = leader
		return err
	case rpc.MethodStatusRaftConfiguration:
		b, err := backend[raftBackend](d, method)
		if err != nil {
			return err
		}
		cfg, err := b.RaftConfiguration(ctx)
		if cfg != nil {
			*reply.(*rpc.RaftConfigurationResponse) = *cfg
		}
		return err
	case rpc.MethodKVSGet, rpc.MethodKVSList, rpc.MethodKVSListKeys, rpc.MethodKVSApply:
		b, err := backend[kvBackend](d, method)
		if err != nil {
			return err
		}
		return kvRPC(ctx, b, method, args, reply)
	case rpc.MethodSessionApply, rpc.MethodSessionRenew, rpc.MethodSessionGet, rpc.MethodSessionList:
		b, err := backend[sessionBackend](d, method)
		if err != nil {
			return err
		}
		return sessionRPC(ctx, b, method, args, reply)
	case rpc.MethodTxnApply, rpc.MethodTxnRead:
		b, err := backend[txnBackend](d, method)
		if err != nil {
			return err
		}
		return txnRPC(ctx, b, method, args, reply)
	case rpc.MethodPreparedQueryApply, rpc.MethodPreparedQueryGet, rpc.MethodPreparedQueryList, rpc.MethodPreparedQueryExecute:
		b, err := backend[queryBackend](d, method)
		if err != nil {
			return err
		}
		return queryRPC(ctx, b, method, args, reply)
	case rpc.MethodCoordinateListNodes, rpc.MethodCoordinateNode, rpc.MethodCoordinateListDatacenters, rpc.MethodCoordinateUpdate:
		b, err := backend[coordinateBackend](d, method)
		if err != nil {
			return err
		}
		return coordinateRPC(ctx, b, method, args, reply)
	case rpc.MethodOperatorAutopilotGetConfiguration, rpc.MethodOperatorAutopilotSetConfiguration, rpc.MethodOperatorServerHealth:
		b, err := backend[autopilotBackend](d, method)
		if err != nil {
			return err
		}
		return autopilotRPC(ctx, b, method, args, reply)
	case rpc.MethodSnapshotSave, rpc.MethodSnapshotAuthorize, rpc.MethodSnapshotRestore:
		b, err := backend[snapshotBackend](d, method)
		if err != nil {
			return err
		}
		return snapshotRPC(ctx, b, method, args, reply)
	}
	return fmt.Errorf("fake door: nothing answers %s", method)
}

func catalogRPC(ctx context.Context, b catalogBackend, method string, args, reply any) error {
	var err error
	switch a := args.(type) {
	case *rpc.NodesRequest:
		r := reply.(*rpc.NodesResponse)
		var m queryMeta
		r.Nodes, m, err = b.Nodes(ctx, optsOf(a.QueryOptions, a.Near))
		r.QueryMeta = m.rpc()
	case *rpc.ServicesRequest:
		r := reply.(*rpc.ServicesResponse)
		var m queryMeta
		if a.Instances {
			r.Instances, m, err = b.ServiceNodes(ctx, optsOf(a.QueryOptions, ""))
		} else {
			r.Services, m, err = b.Services(ctx, optsOf(a.QueryOptions, ""))
		}
		r.QueryMeta = m.rpc()
	case *rpc.ServiceInstancesRequest:
		r := reply.(*rpc.ServiceInstancesResponse)
		var m queryMeta
		r.Instances, m, err = b.ServiceInstances(ctx, optsOf(a.QueryOptions, a.Near), a.Service, a.Tag)
		r.QueryMeta = m.rpc()
	case *rpc.NodeServicesRequest:
		r := reply.(*rpc.NodeServicesResponse)
		var m queryMeta
		r.Node, r.Services, m, err = b.NodeServices(ctx, optsOf(a.QueryOptions, ""), a.Node)
		r.QueryMeta = m.rpc()
	case *rpc.NodeChecksRequest:
		err = checksReply(reply, a.QueryOptions, a.Node, func(o queryOpts, n string) ([]*catalog.Check, queryMeta, error) { return b.NodeChecks(ctx, o, n) })
	case *rpc.ServiceChecksRequest:
		err = checksReply(reply, a.QueryOptions, a.Service, func(o queryOpts, n string) ([]*catalog.Check, queryMeta, error) { return b.ServiceChecks(ctx, o, n) })
	case *rpc.ChecksInStateRequest:
		err = checksReply(reply, a.QueryOptions, a.State, func(o queryOpts, n string) ([]*catalog.Check, queryMeta, error) { return b.ChecksInState(ctx, o, n) })
	case *rpc.RegisterRequest:
		err = b.Register(ctx, a.Datacenter, &a.Registration)
	case *rpc.DeregisterRequest:
		err = b.Deregister(ctx, a.Datacenter, &a.Deregistration)
	default:
		return fmt.Errorf("fake door: %s with %T", method, args)
	}
	return err
}

func checksReply(reply any, opts rpc.QueryOptions, arg string, read func(queryOpts, string) ([]*catalog.Check, queryMeta, error)) error {
	r := reply.(*rpc.ChecksResponse)
	cs, m, err := read(optsOf(opts, ""), arg)
	r.Checks, r.QueryMeta = cs, m.rpc()
	return err
}

func kvRPC(ctx context.Context, b kvBackend, method string, args, reply any) error {
	var err error
	var m queryMeta
	switch a := args.(type) {
	case *rpc.KVSGetRequest:
		r := reply.(*rpc.KVSEntriesResponse)
		var e *catalog.KVEntry
		e, m, err = b.KVGet(ctx, optsOf(a.QueryOptions, ""), a.Key)
		if e != nil {
			r.Entries = []*catalog.KVEntry{e}
		}
		r.QueryMeta = m.rpc()
	case *rpc.KVSListRequest:
		r := reply.(*rpc.KVSEntriesResponse)
		r.Entries, m, err = b.KVList(ctx, optsOf(a.QueryOptions, ""), a.Prefix)
		r.QueryMeta = m.rpc()
	case *rpc.KVSListKeysRequest:
		r := reply.(*rpc.KVSKeysResponse)
		r.Keys, m, err = b.KVKeys(ctx, optsOf(a.QueryOptions, ""), a.Prefix, a.Separator)
		r.QueryMeta = m.rpc()
	case *rpc.KVSApplyRequest:
		e := a.Entry
		reply.(*rpc.KVSApplyResponse).Result, err = b.KVApply(ctx, a.Datacenter, a.Op, &e)
	default:
		return fmt.Errorf("fake door: %s with %T", method, args)
	}
	return err
}

func sessionRPC(ctx context.Context, b sessionBackend, method string, args, reply any) error {
	var err error
	var m queryMeta
	switch a := args.(type) {
	case *rpc.SessionApplyRequest:
		if a.Op == catalog.SessionDestroy {
			return b.SessionDestroy(ctx, a.Datacenter, a.Session.ID)
		}
		s := a.Session
		reply.(*rpc.SessionApplyResponse).ID, err = b.SessionCreate(ctx, a.Datacenter, &s)
	case *rpc.SessionRenewRequest:
		var s *catalog.Session
		if s, err = b.SessionRenew(ctx, a.Datacenter, a.ID); s != nil {
			reply.(*rpc.SessionsResponse).Sessions = []*catalog.Session{s}
		}
	case *rpc.SessionGetRequest:
		r := reply.(*rpc.SessionsResponse)
		var s *catalog.Session
		if s, m, err = b.SessionInfo(ctx, optsOf(a.QueryOptions, ""), a.ID); s != nil {
			r.Sessions = []*catalog.Session{s}
		}
		r.QueryMeta = m.rpc()
	case *rpc.SessionListRequest:
		r := reply.(*rpc.SessionsResponse)
		r.Sessions, m, err = b.SessionList(ctx, optsOf(a.QueryOptions, ""), a.Node)
		r.QueryMeta = m.rpc()
	default:
		return fmt.Errorf("fake door: %s with %T", method, args)
	}
	return err
}

func txnRPC(ctx context.Context, b txnBackend, method string, args, reply any) error {
	switch a := args.(type) {
	case *rpc.TxnApplyRequest:
		resp, err := b.TxnApply(ctx, a.Datacenter, &catalog.TxnRequest{Ops: a.Ops})
		if resp != nil {
			r := reply.(*rpc.TxnResponse)
			r.Results, r.Errors = resp.Results, resp.Errors
		}
		return err
	case *rpc.TxnReadRequest:
		resp, m, err := b.TxnRead(ctx, optsOf(a.QueryOptions, ""), &catalog.TxnRequest{Ops: a.Ops})
		r := reply.(*rpc.TxnReadResponse)
		if resp != nil {
			r.Results, r.Errors = resp.Results, resp.Errors
		}
		r.QueryMeta = m.rpc()
		return err
	}
	return fmt.Errorf("fake door: %s with %T", method, args)
}

func queryRPC(ctx context.Context, b queryBackend, method string, args, reply any) error {
	var err error
	switch a := args.(type) {
	case *rpc.PreparedQueryApplyRequest:
		q := a.Query
		reply.(*rpc.PreparedQueryApplyResponse).ID, err = b.ApplyQuery(ctx, a.Op, &q)
	case *rpc.PreparedQueryGetRequest:
		r := reply.(*rpc.PreparedQueriesResponse)
		r.Index, r.Queries, err = b.Queries(ctx, a.QueryID)
	case *rpc.PreparedQueryListRequest:
		r := reply.(*rpc.PreparedQueriesResponse)
		r.Index, r.Queries, err = b.Queries(ctx, "")
	case *rpc.PreparedQueryExecuteRequest:
		var res *catalog.QueryResult
		if res, err = b.ExecuteQuery(ctx, a.Datacenter, a.QueryIDOrName); res != nil {
			reply.(*rpc.PreparedQueryExecuteResponse).Result = *res
		}
	default:
		return fmt.Errorf("fake door: %s with %T", method, args)
	}
	return err
}

func coordinateRPC(ctx context.Context, b coordinateBackend, method string, args, reply any) error {
	var err error
	var m queryMeta
	switch a := args.(type) {
	case *rpc.CoordinateListRequest:
		r := reply.(*rpc.CoordinatesResponse)
		r.Coordinates, m, err = b.CoordinateNodes(ctx, optsOf(a.QueryOptions, ""))
		r.QueryMeta = m.rpc()
	case *rpc.CoordinateNodeRequest:
		r := reply.(*rpc.CoordinatesResponse)
		r.Coordinates, m, err = b.CoordinateNode(ctx, optsOf(a.QueryOptions, ""), a.Node)
		r.QueryMeta = m.rpc()
	case *rpc.DatacentersRequest:
		reply.(*rpc.DatacenterCoordinatesResponse).Datacenters, err = b.CoordinateDatacenters(ctx)
	case *rpc.CoordinateUpdateRequest:
		err = b.CoordinateUpdate(ctx, a.Datacenter, a.Node, a.Coord)
	default:
		return fmt.Errorf("fake door: %s with %T", method, args)
	}
	return err
}

func autopilotRPC(ctx context.Context, b autopilotBackend, method string, args, reply any) error {
	switch a := args.(type) {
	case *rpc.AutopilotGetConfigRequest:
		cfg, err := b.AutopilotConfiguration(ctx, a.Datacenter, a.AllowStale)
		if cfg != nil {
			reply.(*rpc.AutopilotConfigResponse).Config = *cfg
		}
		return err
	case *rpc.AutopilotSetConfigRequest:
		var err error
		reply.(*rpc.AutopilotSetConfigResponse).Updated, err = b.SetAutopilotConfiguration(ctx, a.Datacenter, a.Config, a.CAS)
		return err
	case *rpc.ServerHealthRequest:
		h, err := b.ServerHealth(ctx, a.Datacenter)
		if h != nil {
			*reply.(*rpc.ServerHealthResponse) = *h
		}
		return err
	}
	return fmt.Errorf("fake door: %s with %T", method, args)
}

func snapshotRPC(ctx context.Context, b snapshotBackend, method string, args, reply any) error {
	var err error
	switch a := args.(type) {
	case *rpc.SnapshotSaveRequest:
		r := reply.(*rpc.SnapshotSaveResponse)
		r.Archive, r.Index, err = b.SaveSnapshot(ctx, a.Datacenter, a.AllowStale)
	case *rpc.SnapshotAuthorizeRequest:
		err = b.AuthorizeRestore(ctx, a.Datacenter)
	case *rpc.SnapshotRestoreRequest:
		reply.(*rpc.SnapshotRestoreResponse).Index, err = b.RestoreSnapshot(ctx, a.Datacenter, a.Archive)
	default:
		return fmt.Errorf("fake door: %s with %T", method, args)
	}
	return err
}
