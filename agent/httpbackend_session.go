package agent

import (
	"context"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/rpc"
)

// Sessions as the HTTP API reads and writes them: through the door, as
// the catalog (httpbackend.go).

var _ httpapi.Sessions = httpBackend{}

func (h httpBackend) SessionCreate(ctx context.Context, dc string, s *catalog.Session) (string, error) {
	args := &rpc.SessionApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Op: catalog.SessionCreate, Session: *s}
	if s.NodeChecks == nil {
		// Consul's default: the node's gossip check.
		args.Session.NodeChecks = []string{consensus.GossipCheckID}
	}
	var reply rpc.SessionApplyResponse
	if err := h.door.RPC(ctx, rpc.MethodSessionApply, args, &reply); err != nil {
		return "", err
	}
	return reply.ID, nil
}

func (h httpBackend) SessionDestroy(ctx context.Context, dc, id string) error {
	args := &rpc.SessionApplyRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Op: catalog.SessionDestroy, Session: catalog.Session{ID: id}}
	var reply rpc.SessionApplyResponse
	return h.door.RPC(ctx, rpc.MethodSessionApply, args, &reply)
}

func (h httpBackend) SessionRenew(ctx context.Context, dc, id string) (*catalog.Session, error) {
	var reply rpc.SessionsResponse
	args := &rpc.SessionRenewRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, ID: id}
	if err := h.door.RPC(ctx, rpc.MethodSessionRenew, args, &reply); err != nil || len(reply.Sessions) == 0 {
		return nil, err
	}
	return reply.Sessions[0], nil
}

func (h httpBackend) SessionInfo(ctx context.Context, opts httpapi.QueryOptions, id string) (*catalog.Session, httpapi.QueryMeta, error) {
	var reply rpc.SessionsResponse
	err := h.door.RPC(ctx, rpc.MethodSessionGet, &rpc.SessionGetRequest{QueryOptions: rpcOptions(opts), ID: id}, &reply)
	var s *catalog.Session
	if len(reply.Sessions) > 0 {
		s = reply.Sessions[0]
	}
	return s, toMeta(reply.QueryMeta), err
}

func (h httpBackend) SessionList(ctx context.Context, opts httpapi.QueryOptions, node string) ([]*catalog.Session, httpapi.QueryMeta, error) {
	var reply rpc.SessionsResponse
	err := h.door.RPC(ctx, rpc.MethodSessionList, &rpc.SessionListRequest{QueryOptions: rpcOptions(opts), Node: node}, &reply)
	return reply.Sessions, toMeta(reply.QueryMeta), err
}
