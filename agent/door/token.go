package door

import (
	"context"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/rpc"
)

// WithToken returns d giving every request the token it is made with:
// the one its context carries (an HTTP request's, or a service's own for
// anti-entropy), else what fallback returns then (acl.tokens.default for
// requests without a token; the DNS source's door, acl.tokens.dns; each
// may change at runtime). The servers check it; the agent only carries
// it.
func WithToken(d Door, fallback func() string) Door { return tokenDoor{door: d, fallback: fallback} }

type tokenDoor struct {
	door     Door
	fallback func() string
}

func (d tokenDoor) RPC(ctx context.Context, method string, args, reply any) error {
	d.setToken(ctx, args)
	return d.door.RPC(ctx, method, args, reply)
}

func (d tokenDoor) Stream(ctx context.Context, method string, args any) (rpc.Stream, error) {
	d.setToken(ctx, args)
	return d.door.Stream(ctx, method, args)
}

// setToken gives args ctx's token, or the fallback, unless it has one.
func (d tokenDoor) setToken(ctx context.Context, args any) {
	if a, ok := args.(rpc.Authenticated); ok {
		tok := acl.TokenFromContext(ctx)
		if tok == "" {
			tok = d.fallback()
		}
		a.SetTokenIfEmpty(tok)
	}
}
