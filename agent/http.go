package agent

import (
	"context"
	"time"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/agent/tokens"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// The agent's side of the HTTP API (startHTTP wires it): what the API
// cannot ask the servers through the door.

// cachedInstances answers the API's ?cached service reads from the DNS
// cache. The cache holds what the DNS token (acl.tokens.dns, else
// acl.tokens.default) may read, so a read made with another token
// (acl.tokens.default when it carries none) is answered by the servers
// instead, as a stale read, and reported a miss.
func (a *Agent) cachedInstances(ctx context.Context, name, tag string) (uint64, []catalog.ServiceInstance, bool, time.Duration, error) {
	tok := acl.TokenFromContext(ctx)
	if tok == "" {
		tok = a.tokens.Get(tokens.Default)
	}
	if tok != a.tokens.DNSToken() {
		var reply rpc.ServiceInstancesResponse
		args := &rpc.ServiceInstancesRequest{QueryOptions: rpc.QueryOptions{AllowStale: true}, Service: name, Tag: tag}
		err := a.door.RPC(ctx, rpc.MethodCatalogServiceInstances, args, &reply)
		return reply.Index, reply.Instances, false, 0, err
	}
	return a.dnsSrc.CachedInstances(ctx, name, tag)
}

// askDNS answers the web UI's DNS questions through the agent's own DNS
// server.
func (a *Agent) askDNS(name, qtype string) (httpapi.DNSReply, error) {
	r, err := a.dns.Ask(name, qtype)
	return httpapi.DNSReply{Rcode: r.Rcode, Answer: r.Answer, Extra: r.Extra}, err
}
