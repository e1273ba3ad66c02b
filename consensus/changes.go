package consensus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Publish registers c's methods on s, under rpc.CatalogEndpoint, and its
// change feed (Feed), a stream method; and makes s check every call's
// token against its method's Need with c's ACL data (AuthorizeCall).
func (c *Catalog) Publish(s *rpc.Server) error {
	s.SetAuthorizer(c)
	if err := s.Register(rpc.CatalogEndpoint, c); err != nil {
		return err
	}
	return rpc.RegisterStream(s, rpc.MethodCatalogFeed, feedNeed, c.Feed)
}

// Feed tells its caller, for as long as it listens, which names change
// after args.MinQueryIndex: the one stream each agent's cache keeps open
// per datacenter, instead of a blocking query per cached name. Each reply
// carries the changes since the last one (the first, with MinQueryIndex
// 0, the current index at once); a reply with a Reset (the change log
// cannot answer for the index) means anything may have changed. When
// nothing changes for args.MaxQueryTime a reply with no news is sent all
// the same: the caller's proof that this server still answers.
//
// The feed is answered from this server's state (a stale read, as every
// agent's feed asks for); a request naming another datacenter is relayed
// from one of its servers.
func (c *Catalog) Feed(ctx context.Context, args *rpc.ChangesRequest, send func(*rpc.ChangesResponse) error) error {
	ctx, release := c.requestContext(ctx)
	defer release()
	if err := args.Validate(); err != nil {
		return err
	}
	if args.Datacenter != "" && !strings.EqualFold(args.Datacenter, c.cfg.Datacenter) {
		return c.relayFeed(ctx, args, send)
	}
	q := args.QueryOptions
	for {
		reply := new(rpc.ChangesResponse)
		if err := c.changes(ctx, args.Token, q, reply); err != nil {
			return err
		}
		if err := send(reply); err != nil {
			return err
		}
		q.MinQueryIndex = reply.Index
	}
}

// changes answers one turn of the feed: the changes after q.MinQueryIndex,
// blocking until there are some or q's wait passes.
func (c *Catalog) changes(ctx context.Context, token string, q rpc.QueryOptions, reply *rpc.ChangesResponse) error {
	authz, err := c.authorize(token)
	if err != nil {
		return err
	}
	// blockingQuery, not c.query: an index ahead of this store's is a
	// Reset below, answered at once by the leader, so the feed needs
	// none of query's check of the store's last index (nine table reads
	// per turn, a tenth of a busy feed's cost).
	err = blockingQuery(ctx, c.cfg.Blocking, q, &reply.QueryMeta, func(ws catalog.WatchSet) (uint64, error) {
		reply.Changes = c.srv.Store().ChangesSince(ws, q.MinQueryIndex)
		if authz != nil {
			// Names the token may not read are not told: their
			// caches hold nothing to refetch anyway.
			ch := &reply.Changes
			ch.Services = slices.DeleteFunc(ch.Services, func(s string) bool { return !authz.ServiceRead(s) })
			ch.Nodes = slices.DeleteFunc(ch.Nodes, func(n string) bool { return !authz.NodeRead(n) })
			ch.Queries = slices.DeleteFunc(ch.Queries, func(q string) bool { return !authz.QueryRead(q) })
		}
		if reply.Changes.Reset && q.MinQueryIndex > reply.Changes.Index && !c.srv.IsLeader() {
			// A follower behind the index the caller already holds
			// (it read from a server further ahead) waits to catch up
			// rather than tell it to start over: a Reset would make
			// the caller refetch everything from this server, and take
			// answers older than those it has.
			return q.MinQueryIndex, nil
		}
		if reply.Changes.Reset {
			// Any index past the one asked about ends the wait.
			return q.MinQueryIndex + 1, nil
		}
		return reply.Changes.Index, nil
	})
	reply.Index = max(reply.Changes.Index, 1)
	reply.KnownLeader = c.srv.Leader() != ""
	reply.LastContact = c.srv.LastContact()
	return err
}

// relayFeed follows the feed of the datacenter args names from one of its
// servers and passes every reply on, until the caller goes away or no
// server of the datacenter answers. When the remote server's stream
// breaks (unreachable, hung, stopping) the relay goes on from the last
// index it passed on, on the next server: the caller sees no gap, and
// does not have to start over from a server that may be behind.
func (c *Catalog) relayFeed(ctx context.Context, args *rpc.ChangesRequest, send func(*rpc.ChangesResponse) error) error {
	dc := args.Datacenter
	if args.FromDatacenter != "" {
		return fmt.Errorf("%s from datacenter %q for %q reached datacenter %q, and requests cross only one: %w %s",
			rpc.MethodCatalogFeed, args.FromDatacenter, dc, c.cfg.Datacenter, ErrNoPathToDatacenter, dc)
	}
	if c.cfg.Router == nil {
		return fmt.Errorf("%s: this server of %q is in no WAN pool: %w %s", rpc.MethodCatalogFeed, c.cfg.Datacenter, ErrNoPathToDatacenter, dc)
	}
	args.FromDatacenter = c.cfg.Datacenter
	// A remote server that stops answering sends no heartbeat: the relay
	// gives up on it a while after the one due, as the caller would.
	patience := maxBlockingWait(args.QueryOptions, c.cfg.Blocking) + c.cfg.ForwardTimeout
	passed := func(r *rpc.ChangesResponse) error {
		if err := send(r); err != nil {
			return fmt.Errorf("%w: %w", errCallerSide, err)
		}
		args.MinQueryIndex = r.Index
		return nil
	}
	for {
		servers, err := c.cfg.Router.route(dc)
		if err != nil {
			return fmt.Errorf("%s: %w", rpc.MethodCatalogFeed, err)
		}
		var failed []error
		progress := false
		for _, addr := range servers[:min(len(servers), maxDCAttempts)] {
			from := args.MinQueryIndex
			err := c.relayFrom(ctx, dc, addr, args, patience, passed)
			switch {
			case ctx.Err() != nil || errors.Is(err, errCallerSide):
				return fmt.Errorf("relay the feed of datacenter %s: %w", dc, err)
			case !errors.Is(err, rpc.ErrTransport) && !errors.Is(err, rpc.ErrServerStopping) && !errors.Is(err, context.DeadlineExceeded):
				return err // the remote server's answer, as it is
			}
			c.srv.logger.Debug("feed relay to another datacenter broke; going on from the next server", "dc", dc, "peer", addr, "index", args.MinQueryIndex, "err", err)
			progress = progress || args.MinQueryIndex != from
			failed = append(failed, err)
		}
		if !progress {
			return fmt.Errorf("%w %s: %d of its servers tried, none answered: %w", ErrNoPathToDatacenter, dc, len(failed), errors.Join(failed...))
		}
	}
}

// errCallerSide marks a relay that ended on this side: the caller went
// away or could not be sent to.
var errCallerSide = errors.New("the relay's caller")

// relayFrom starts args' feed on the server at addr of dc and passes its
// replies to pass until either fails.
func (c *Catalog) relayFrom(ctx context.Context, dc, addr string, args *rpc.ChangesRequest, patience time.Duration, pass func(*rpc.ChangesResponse) error) error {
	// A server that hung before answering a new session holds up the
	// start (the pool sends nothing before the answer): it gets the
	// patience a reply gets.
	sctx, cancel := context.WithTimeout(ctx, patience)
	st, err := c.pool.StreamDC(sctx, dc, addr, rpc.MethodCatalogFeed, args)
	cancel()
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		reply := new(rpc.ChangesResponse)
		rctx, cancel := context.WithTimeout(ctx, patience)
		err := st.Recv(rctx, reply)
		cancel()
		if err != nil {
			return err
		}
		if err := pass(reply); err != nil {
			return err
		}
	}
}
