package local

import (
	"context"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Caller makes an RPC to the servers: the agent's door.
type Caller interface {
	RPC(ctx context.Context, method string, args, reply any) error
}

// RPCCatalog is the Catalog of the servers a Caller reaches: writes and
// stale reads of the agent's datacenter.
type RPCCatalog struct {
	door  Caller
	dc    string
	token func() string
}

var _ Catalog = RPCCatalog{}

// NewRPCCatalog returns the catalog of datacenter dc through d, written
// and read with the token that token returns then (acl.tokens.agent,
// which may change at runtime) when ctx carries no token of a request or
// of a service.
func NewRPCCatalog(d Caller, dc string, token func() string) RPCCatalog {
	return RPCCatalog{door: d, dc: dc, token: token}
}

// withToken returns ctx carrying the agent's token unless it carries one.
func (c RPCCatalog) withToken(ctx context.Context) context.Context {
	tok := c.token()
	if tok == "" || acl.TokenFromContext(ctx) != "" {
		return ctx
	}
	return acl.ContextWithToken(ctx, tok)
}

// stale is the options of every read: any server answers from its own
// state, so anti-entropy and alias checks keep working without a leader.
func (c RPCCatalog) stale() rpc.QueryOptions {
	return rpc.QueryOptions{Datacenter: c.dc, AllowStale: true}
}

func (c RPCCatalog) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: c.dc}, Registration: *req}
	return c.door.RPC(c.withToken(ctx), rpc.MethodCatalogRegister, args, nil)
}

func (c RPCCatalog) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	args := &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: c.dc}, Deregistration: *req}
	return c.door.RPC(c.withToken(ctx), rpc.MethodCatalogDeregister, args, nil)
}

func (c RPCCatalog) NodeServices(ctx context.Context, name string) (*catalog.Node, []*catalog.Service, error) {
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: c.stale(), Node: name}
	if err := c.door.RPC(c.withToken(ctx), rpc.MethodCatalogNodeServices, args, &reply); err != nil {
		return nil, nil, err
	}
	return reply.Node, reply.Services, nil
}

func (c RPCCatalog) NodeChecks(ctx context.Context, node string) (uint64, []*catalog.Check, error) {
	var reply rpc.ChecksResponse
	args := &rpc.NodeChecksRequest{QueryOptions: c.stale(), Node: node}
	if err := c.door.RPC(c.withToken(ctx), rpc.MethodCatalogNodeChecks, args, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Checks, nil
}
