package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/cairndns/cairn/rpc"
)

// door is the one way this agent's consumers reach the servers: the DNS
// cache and its change feed, the HTTP API's reads and writes, anti-entropy,
// snapshots, prepared queries and membership all call the servers'
// endpoints (rpc.Method*) through it. A server serves the call in process
// (serverDoor); a client sends it to a server of its datacenter
// (clientDoor). Either way the endpoint does the same thing: forward to
// the leader, to another datacenter, block, validate.
//
// RPC may be called from any goroutine. ctx bounds the call, on the
// server too (blocking waits and forwards end with it).
type door interface {
	RPC(ctx context.Context, method string, args, reply any) error
}

// serverDoor serves a server agent's calls in process: the endpoints
// registered on its rpc server run in the calling goroutine, with no
// connection to itself.
type serverDoor struct{ srv *rpc.Server }

func (d serverDoor) RPC(ctx context.Context, method string, args, reply any) error {
	return d.srv.Call(ctx, method, args, reply)
}

// errNoServers is returned, wrapped, by every clientDoor call made while no
// server of the datacenter is known.
var errNoServers = errors.New("no cairn servers known; is the agent joined to a cluster?")

// errFateUnknown is wrapped by a write's error when the connection to the
// server broke after the write was sent.
var errFateUnknown = errors.New("the connection to the server broke after the write was sent; it may or may not have been applied")

// clientDoor sends a client agent's calls to the servers of its
// datacenter, found in LAN gossip.
//
// Calls go to one server, picked at random from servers() and kept while
// it is among them and answers: reads from one server see its state move
// forward only, where reads spread over servers could see a write and then
// miss it on a server that has not applied it yet. Clients spread over the
// servers by each picking at random. A call that fails with
// rpc.ErrTransport (the server could not be reached, or the connection
// broke) is tried once more, on another server when there is one — a
// write (its args are an rpc.Write) only when it was never sent; an error
// the server returned (*rpc.RemoteError) is final.
type clientDoor struct {
	pool *rpc.Pool
	// servers returns the RPC addresses of the live servers of this
	// datacenter; called once per call, from any goroutine.
	servers func() []string
	logger  *slog.Logger
	// randN returns a number in [0, n); nil means math/rand/v2.IntN. A
	// hook for tests, to pick servers in a known order.
	randN func(n int) int

	mu        sync.Mutex
	preferred string // where calls go first; "" before the first call
}

// RPC calls method on the preferred server, and once more on another one
// when the first call fails with rpc.ErrTransport (a write only when it
// was never sent: after a connection broke mid-call the server may have
// applied it, and the caller gets an error saying so rather than a second
// attempt that could hide it). With a single server known the retry goes
// to that server again, which helps when the pool's session to it had
// broken (the pool dials a new one).
func (d *clientDoor) RPC(ctx context.Context, method string, args, reply any) error {
	servers := d.servers()
	n := len(servers)
	if n == 0 {
		return fmt.Errorf("%s: %w", method, errNoServers)
	}
	randN := d.randN
	if randN == nil {
		randN = rand.IntN
	}
	d.mu.Lock()
	first := slices.Index(servers, d.preferred)
	if first < 0 {
		first = randN(n)
		d.preferred = servers[first]
	}
	d.mu.Unlock()
	err := d.pool.Call(ctx, servers[first], method, args, reply)
	if err == nil || !errors.Is(err, rpc.ErrTransport) {
		return err
	}
	next := first
	if n > 1 {
		next = (first + 1 + randN(n-1)) % n // any server but the first
	}
	// Whatever becomes of this call, later ones try another server.
	d.mu.Lock()
	if d.preferred == servers[first] {
		d.preferred = servers[next]
	}
	d.mu.Unlock()
	if _, write := args.(rpc.Write); write && !errors.Is(err, rpc.ErrNotSent) {
		return fmt.Errorf("%w: %w", errFateUnknown, err)
	}
	d.logger.Debug("rpc to server failed, retrying", "peer", servers[first], "retry", servers[next], "err", err)
	return d.pool.Call(ctx, servers[next], method, args, reply)
}
