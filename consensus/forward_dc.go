package consensus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// This file holds the Catalog endpoint's forwarding across datacenters:
// a request naming another datacenter is sent, through the Router, to a
// live server of that datacenter, which answers it as a request of its own
// (forwarding it to its leader as usual). No data crosses otherwise: each
// datacenter's catalog is its own.

// maxDCAttempts bounds how many servers of another datacenter one request
// tries before it fails: enough to get past a server or two that died
// before the WAN pool noticed, few enough that a datacenter cut off from
// this one fails fast rather than after a dial timeout per server.
const maxDCAttempts = 3

// forwardDC forwards a request to datacenter dc when dc is not this
// server's. done reports whether it did (or refused to); when it is false
// the request is for this datacenter and the caller answers it.
//
// from points at the request's FromDatacenter: it is set to this
// datacenter before the request is sent, and a request that already
// carries one is refused rather than sent on, so a request crosses at
// most one datacenter boundary even when a server is wrongly listed under
// a datacenter it is not in.
//
// A hop that fails with rpc.ErrTransport is tried on another server of dc:
// a read always (and a read the remote server answered "no leader" or
// "stopping" for), a write (write set) only when it was never sent
// (rpc.ErrNotSent), since a write whose connection broke may have been
// applied. So is a read whose server stopped before answering
// (rpc.ErrServerStopping). A blocking read asks the next server only for
// what is left of its wait. The remote server's own error comes back as it was sent (a
// *rpc.RemoteError), as with a forward to the leader. wait is a blocking
// query's longest wait, given to the forward on top of ForwardTimeout;
// ctx (the request's) ends it sooner when it ends sooner. from is cleared
// again when the forward returns, as forward clears its mark.
func (c *Catalog) forwardDC(ctx context.Context, method, dc string, from *string, write bool, args, reply any, wait time.Duration) (done bool, err error) {
	if dc == "" || strings.EqualFold(dc, c.cfg.Datacenter) {
		return false, nil
	}
	if *from != "" {
		return true, fmt.Errorf("%s from datacenter %q for %q reached datacenter %q, and requests cross only one: %w %s",
			method, *from, dc, c.cfg.Datacenter, ErrNoPathToDatacenter, dc)
	}
	if c.cfg.Router == nil {
		return true, fmt.Errorf("%s: this server of %q is in no WAN pool: %w %s", method, c.cfg.Datacenter, ErrNoPathToDatacenter, dc)
	}
	servers, err := c.cfg.Router.route(dc)
	if err != nil {
		return true, fmt.Errorf("%s: %w", method, err)
	}
	servers = servers[:min(len(servers), maxDCAttempts)]
	*from = c.cfg.Datacenter
	defer func() { *from = "" }()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ForwardTimeout+wait)
	defer cancel()
	var failed []error
	for i, addr := range servers {
		if i > 0 {
			// A blocking read asks the next server only for the wait it
			// has left (blocking.go).
			keepBlockingEnd(ctx)
		}
		var err error
		if write {
			err = c.pool.CallDC(ctx, dc, addr, method, args, reply)
		} else {
			err = c.readDC(ctx, dc, addr, method, args, reply)
		}
		if err == nil {
			return true, nil
		}
		remote, isRemote := errors.AsType[*rpc.RemoteError](err)
		f := rpc.Classify(err)
		// A server that stopped before answering a read, or that knows no
		// leader to forward it to (it lost one and has not seen the next
		// yet), did nothing: the next one answers it, as the client door
		// moves on. A write's fate is the remote server's to tell.
		movesOn := f == rpc.Stopping || f == rpc.NoLeader
		if isRemote && (write || !movesOn) {
			return true, remote
		}
		if !isRemote && f != rpc.Unsent && f != rpc.Broken || ctx.Err() != nil {
			return true, fmt.Errorf("forward to datacenter %s: %w", dc, err)
		}
		if write && !f.Unapplied() {
			return true, fmt.Errorf("forward to datacenter %s: the connection broke after the write was sent; it may or may not have been applied: %w", dc, err)
		}
		c.srv.logger.Debug("forward to another datacenter failed", "dc", dc, "peer", addr, "method", method, "err", err)
		failed = append(failed, err)
	}
	return true, fmt.Errorf("%w %s: %d of its servers tried, none answered: %w", ErrNoPathToDatacenter, dc, len(failed), errors.Join(failed...))
}

// dcPings are a cross-datacenter read's pings, as the client door pings
// its server; a WAN's round trip fits in the timeout.
var dcPings = rpc.Pings{After: time.Second, Every: 5 * time.Second, Timeout: time.Second}

// readDC makes a read on the server at addr of dc, pinging it while the
// read waits; a missed ping ends the read with rpc.ErrTransport, for the
// next server. Writes are not watched: one left at a hung server is
// answered as unknown before the deadline it carries.
func (c *Catalog) readDC(ctx context.Context, dc, addr, method string, args, reply any) error {
	err := rpc.CallPinged(ctx, dcPings,
		func(ctx context.Context) error { return c.pool.CallDC(ctx, dc, addr, method, args, reply) },
		func(ctx context.Context) error { return c.pool.ProbeDC(ctx, dc, addr) })
	if errors.Is(err, rpc.ErrServerHung) {
		return fmt.Errorf("%s to %s: %w", method, addr, err)
	}
	return err
}

// ListDatacenters returns the datacenters this server knows: its own and
// those of the servers in its WAN pool, sorted. It is answered here,
// without forwarding, and never blocks.
func (c *Catalog) ListDatacenters(_ context.Context, _ *rpc.DatacentersRequest, reply *rpc.DatacentersResponse) error {
	if c.cfg.Router == nil {
		reply.Datacenters = []string{strings.ToLower(c.cfg.Datacenter)}
		return nil
	}
	reply.Datacenters = c.cfg.Router.Datacenters()
	return nil
}
