package agent

import (
	"context"
	"sync"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/door"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// aclBackend is the ACL system as the HTTP API sees it: tokens and
// policies on the servers, through the door, and what a request's token
// may do, for the endpoints the agent answers itself, resolved by the
// servers and kept for TokenTTL.
type aclBackend struct {
	door door.Door
	ttl  time.Duration

	mu    sync.Mutex
	cache map[string]resolvedToken // by secret
}

type resolvedToken struct {
	authz   *acl.Authorizer
	expires time.Time
}

// resolvedTokenCap bounds the agent's cache of resolved tokens.
const resolvedTokenCap = 1024

var _ httpapi.ACL = (*aclBackend)(nil)

func newACLBackend(d door.Door, ttl time.Duration) *aclBackend {
	return &aclBackend{door: d, ttl: ttl, cache: make(map[string]resolvedToken)}
}

// Authorizer resolves the request's token through the servers, which tell
// its policies' rules; nil when ACLs are off there.
func (b *aclBackend) Authorizer(ctx context.Context) (*acl.Authorizer, error) {
	secret := acl.TokenFromContext(ctx)
	now := time.Now()
	b.mu.Lock()
	if r, ok := b.cache[secret]; ok && now.Before(r.expires) {
		b.mu.Unlock()
		return r.authz, nil
	}
	b.mu.Unlock()
	var reply rpc.ACLResolveResponse
	if err := b.door.RPC(ctx, rpc.MethodACLResolve, &rpc.ACLResolveRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}}, &reply); err != nil {
		return nil, err
	}
	var authz *acl.Authorizer
	switch {
	case !reply.Enabled:
	case reply.Management:
		authz = acl.ManageAll()
	default:
		policies := make([]*acl.Policy, 0, len(reply.Rules))
		for _, rules := range reply.Rules {
			if p, err := acl.Parse(rules); err == nil {
				policies = append(policies, p)
			}
		}
		authz = acl.New(reply.DefaultAllow, policies...)
	}
	b.mu.Lock()
	if len(b.cache) >= resolvedTokenCap {
		clear(b.cache)
	}
	expires := now.Add(b.ttl)
	if e := reply.ExpirationTime; !e.IsZero() && e.Before(expires) {
		expires = e // an expiring token stops working here when it does on the servers
	}
	b.cache[secret] = resolvedToken{authz: authz, expires: expires}
	b.mu.Unlock()
	return authz, nil
}

func (b *aclBackend) Bootstrap(ctx context.Context, secret string) (*rpc.ACLTokenView, error) {
	var reply rpc.ACLTokenResponse
	err := b.door.RPC(ctx, rpc.MethodACLBootstrap, &rpc.ACLBootstrapRequest{Secret: secret}, &reply)
	return reply.Token, err
}

func (b *aclBackend) PolicySet(ctx context.Context, p catalog.ACLPolicy) (*catalog.ACLPolicy, error) {
	var reply rpc.ACLPolicyResponse
	err := b.door.RPC(ctx, rpc.MethodACLPolicySet, &rpc.ACLPolicySetRequest{Policy: p}, &reply)
	return reply.Policy, err
}

func (b *aclBackend) PolicyDelete(ctx context.Context, id string) error {
	return b.door.RPC(ctx, rpc.MethodACLPolicyDelete, &rpc.ACLPolicyDeleteRequest{ID: id}, nil)
}

func (b *aclBackend) PolicyRead(ctx context.Context, opts httpapi.QueryOptions, id, name string) (*catalog.ACLPolicy, httpapi.QueryMeta, error) {
	var reply rpc.ACLPolicyResponse
	err := b.door.RPC(ctx, rpc.MethodACLPolicyRead, &rpc.ACLPolicyReadRequest{QueryOptions: rpcOptions(opts), ID: id, Name: name}, &reply)
	return reply.Policy, toMeta(reply.QueryMeta), err
}

func (b *aclBackend) PolicyList(ctx context.Context, opts httpapi.QueryOptions) ([]*catalog.ACLPolicy, httpapi.QueryMeta, error) {
	var reply rpc.ACLPoliciesResponse
	err := b.door.RPC(ctx, rpc.MethodACLPolicyList, &rpc.ACLPolicyListRequest{QueryOptions: rpcOptions(opts)}, &reply)
	return reply.Policies, toMeta(reply.QueryMeta), err
}

func (b *aclBackend) TokenSet(ctx context.Context, spec rpc.ACLTokenSpec, update bool) (*rpc.ACLTokenView, error) {
	var reply rpc.ACLTokenResponse
	err := b.door.RPC(ctx, rpc.MethodACLTokenSet, &rpc.ACLTokenSetRequest{Spec: spec, Update: update}, &reply)
	return reply.Token, err
}

func (b *aclBackend) TokenDelete(ctx context.Context, accessor string) error {
	return b.door.RPC(ctx, rpc.MethodACLTokenDelete, &rpc.ACLTokenDeleteRequest{AccessorID: accessor}, nil)
}

func (b *aclBackend) TokenRead(ctx context.Context, opts httpapi.QueryOptions, accessor string, self bool) (*rpc.ACLTokenView, httpapi.QueryMeta, error) {
	var reply rpc.ACLTokenResponse
	args := &rpc.ACLTokenReadRequest{QueryOptions: rpcOptions(opts), AccessorID: accessor, Self: self}
	err := b.door.RPC(ctx, rpc.MethodACLTokenRead, args, &reply)
	return reply.Token, toMeta(reply.QueryMeta), err
}

func (b *aclBackend) TokenList(ctx context.Context, opts httpapi.QueryOptions) ([]*rpc.ACLTokenView, httpapi.QueryMeta, error) {
	var reply rpc.ACLTokensResponse
	err := b.door.RPC(ctx, rpc.MethodACLTokenList, &rpc.ACLTokenListRequest{QueryOptions: rpcOptions(opts)}, &reply)
	return reply.Tokens, toMeta(reply.QueryMeta), err
}
