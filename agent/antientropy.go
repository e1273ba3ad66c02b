package agent

import (
	"context"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// localCatalog is the catalog as this agent's local state (anti-entropy)
// and its alias checks see it: writes and stale reads of the agent's own
// datacenter, through the door.
type localCatalog struct {
	door door.Door
	dc   string
	// token is what the agent writes with when ctx carries no token of
	// a request or of a service (acl.tokens.agent).
	token string
}

func (a *Agent) localCatalog() localCatalog {
	return localCatalog{door: a.door, dc: a.cfg.Datacenter, token: a.cfg.ACL.AgentToken()}
}

// withToken returns ctx carrying the agent's token unless it carries one.
func (c localCatalog) withToken(ctx context.Context) context.Context {
	if c.token == "" || acl.TokenFromContext(ctx) != "" {
		return ctx
	}
	return acl.ContextWithToken(ctx, c.token)
}

var _ local.Catalog = localCatalog{}

// stale is the options of every read: any server answers from its own
// state, so anti-entropy and alias checks keep working without a leader.
func (c localCatalog) stale() rpc.QueryOptions {
	return rpc.QueryOptions{Datacenter: c.dc, AllowStale: true}
}

func (c localCatalog) Register(ctx context.Context, req *catalog.RegisterRequest) error {
	args := &rpc.RegisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: c.dc}, Registration: *req}
	return c.door.RPC(c.withToken(ctx), rpc.MethodCatalogRegister, args, nil)
}

func (c localCatalog) Deregister(ctx context.Context, req *catalog.DeregisterRequest) error {
	args := &rpc.DeregisterRequest{WriteRequest: rpc.WriteRequest{Datacenter: c.dc}, Deregistration: *req}
	return c.door.RPC(c.withToken(ctx), rpc.MethodCatalogDeregister, args, nil)
}

func (c localCatalog) NodeServices(ctx context.Context, name string) (*catalog.Node, []*catalog.Service, error) {
	var reply rpc.NodeServicesResponse
	args := &rpc.NodeServicesRequest{QueryOptions: c.stale(), Node: name}
	if err := c.door.RPC(c.withToken(ctx), rpc.MethodCatalogNodeServices, args, &reply); err != nil {
		return nil, nil, err
	}
	return reply.Node, reply.Services, nil
}

func (c localCatalog) NodeChecks(ctx context.Context, node string) (uint64, []*catalog.Check, error) {
	var reply rpc.ChecksResponse
	args := &rpc.NodeChecksRequest{QueryOptions: c.stale(), Node: node}
	if err := c.door.RPC(c.withToken(ctx), rpc.MethodCatalogNodeChecks, args, &reply); err != nil {
		return 0, nil, err
	}
	return reply.Index, reply.Checks, nil
}
