package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
)

// Door is how handlers reach the servers: the agent's door, in process on
// a server and through the pool with failover on a client. args and reply
// are the rpc package's own types for method (rpc.Method*). The door gives
// args the token of ctx (acl.ContextWithToken), else the agent's default
// one. Handlers call it from their own goroutines, several at once; a
// blocking read returns when ctx ends.
type Door interface {
	RPC(ctx context.Context, method string, args, reply any) error
}

// Deps is what the API needs of the rest of the agent, given once to New.
// Door, Local, Cluster and Logger are required; a nil optional part turns
// off what its comment says, the same way on every request.
type Deps struct {
	Door    Door
	Local   Local
	Cluster Cluster
	Logger  *slog.Logger

	// Authorizer resolves what the request's token (in ctx) may do on
	// the endpoints the agent answers itself; an unknown token wraps
	// rpc.ErrACLNotFound. nil: ACLs are off, every check passes and
	// /v1/acl/ answers that ACLs are disabled.
	Authorizer func(ctx context.Context) (*acl.Authorizer, error)
	// CachedInstances answers ?cached service reads from the agent's
	// cache: name's instances (every one, sorted by node then service
	// ID), whether the entry was there (hit) and how long it has gone
	// without being confirmed by a server (age, 0 while the cache is in
	// contact). The answer may trail the servers by the moment a change
	// takes to reach the cache. nil: ?cached reads go to the servers.
	CachedInstances func(ctx context.Context, name, tag string) (index uint64, insts []catalog.ServiceInstance, hit bool, age time.Duration, err error)
	// AskDNS answers a question for the web UI as the agent's DNS server
	// answers it now (name, and qtype such as "A" or "SRV"); an error says
	// the question itself is bad. nil: GET /v1/internal/ui/dns is 404.
	AskDNS func(name, qtype string) (DNSReply, error)
	// ServeDNSWire answers a DNS query in wire format, asked by remote
	// (nil when unknown), as the DNS server answers one over TCP, for DNS
	// over HTTPS (RFC 8484); maxAge is how many seconds an HTTP cache may
	// keep the reply. An error says query is not a DNS query message. It
	// returns once the query is answered. nil: /dns-query is 404.
	ServeDNSWire func(query []byte, remote net.Addr) (reply []byte, maxAge uint32, err error)
	// Metrics is the agent's registry, gathered on each GET
	// /v1/agent/metrics. nil: that endpoint is 404.
	Metrics prometheus.Gatherer
	// MetricName is the name a gathered series goes by in the JSON form
	// of /v1/agent/metrics (Consul's dotted names for its aliases:
	// telemetry.Registry.JSONName). nil: the series' own.
	MetricName func(string) string
	// Logs subscribes to the lines logged from now on at level or above,
	// each ending in "\n", in the agent's text format or as JSON (not to
	// be modified); a reader that falls behind loses lines and is told
	// how many; cancel ends the subscription and closes lines (package
	// logstream's Hub.Subscribe). nil: GET /v1/agent/monitor is 404.
	Logs func(level slog.Level, json bool) (lines <-chan []byte, cancel func())
	// Stats returns the sections of Consul's /v1/agent/self Stats that
	// only the agent knows (consul, serf_lan; raft and serf_wan on a
	// server), every value a string, as `consul info` prints them. nil:
	// none of those.
	Stats func() map[string]map[string]string
	// Tokens are the agent's own tokens, set by PUT
	// /v1/agent/token/<kind>. nil: that endpoint is 404.
	Tokens AgentTokens
	// Events is the agent's last user events, for GET /v1/event/list.
	// nil: that endpoint is 404.
	Events Events
	// Reload re-reads the configuration the agent was started with and
	// applies what can change without a restart; a bad configuration is a
	// *catalog.FieldError naming the field, or wraps ErrBadConfig when no
	// field is to blame (a file that does not parse), and changes
	// nothing. nil: PUT
	// /v1/agent/reload is 404.
	Reload func() error
}

// validate names the required parts that are missing.
func (d Deps) validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		nil  bool
	}{{"Door", d.Door == nil}, {"Local", d.Local == nil}, {"Cluster", d.Cluster == nil}, {"Logger", d.Logger == nil}} {
		if p.nil {
			errs = append(errs, errors.New("http Deps."+p.name+": required"))
		}
	}
	return errors.Join(errs...)
}
