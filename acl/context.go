package acl

import "context"

// tokenKey is the context key of a request's token secret.
type tokenKey struct{}

// ContextWithToken returns ctx carrying the secret of the token a request
// was made with, for the layers that pass it on to the servers. An empty
// secret means the anonymous token.
func ContextWithToken(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, tokenKey{}, secret)
}

// TokenFromContext returns the token secret ContextWithToken put in ctx,
// or "" (the anonymous token) if none.
func TokenFromContext(ctx context.Context) string {
	s, _ := ctx.Value(tokenKey{}).(string)
	return s
}
