package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/rpc"
)

// TokenCache tells what a request's token may do, for the endpoints the
// agent answers itself (Deps.Authorizer): resolved by the servers through
// the door and kept for a while (acl.token_ttl).
type TokenCache struct {
	door Door
	ttl  time.Duration

	mu    sync.Mutex
	cache map[string]resolvedToken // by secret
}

type resolvedToken struct {
	authz   *acl.Authorizer
	expires time.Time
}

// resolvedTokenCap bounds the cache.
const resolvedTokenCap = 1024

// NewTokenCache returns a cache that keeps a token's authorizer for ttl.
func NewTokenCache(d Door, ttl time.Duration) *TokenCache {
	return &TokenCache{door: d, ttl: ttl, cache: make(map[string]resolvedToken)}
}

// Authorizer resolves the request's token through the servers, which tell
// its policies' rules; nil when ACLs are off there.
func (b *TokenCache) Authorizer(ctx context.Context) (*acl.Authorizer, error) {
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
