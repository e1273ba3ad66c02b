package door

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cairndns/cairn/rpc"
)

// ErrNoServers is returned, wrapped, by a Client call during whose
// hold no server of the datacenter became known.
var ErrNoServers = errors.New("no cairn servers known; is the agent joined to a cluster?")

// Config is how a client door waits and fails over.
type Config struct {
	// HoldTimeout bounds a call, its retries on other servers included,
	// on top of a blocking query's own wait: Consul's rpc_hold_timeout.
	// Default 7s.
	HoldTimeout time.Duration
	// ProbeAfter is how long a call waits for its answer before the
	// server is pinged; ProbeEvery how often after that while the call
	// (a blocking query) goes on; ProbeTimeout how long a ping may take.
	// A server that misses a ping is hung (stopped, or cut off): its
	// calls are abandoned and go to another server. Defaults 1s, 5s, 1s:
	// a hung server costs a call about 2s, and a server that is merely
	// slow (a write waiting for an election) is left alone.
	ProbeAfter, ProbeEvery, ProbeTimeout time.Duration
	// FailedFor is how long a server that failed is passed over while
	// others are left. Default 30s.
	FailedFor time.Duration
	// RebalanceEvery is how often the door picks its server again at
	// random, so that clients that all moved to one server while another
	// was down spread out again. Default 2m, plus up to a quarter more
	// at random.
	RebalanceEvery time.Duration
}

// DefaultConfig is the client door's configuration before the agent sets
// HoldTimeout from performance.rpc_hold_timeout.
func DefaultConfig() Config {
	return Config{
		HoldTimeout:    7 * time.Second, // Consul's rpc_hold_timeout
		ProbeAfter:     time.Second,
		ProbeEvery:     5 * time.Second,
		ProbeTimeout:   time.Second,
		FailedFor:      30 * time.Second,
		RebalanceEvery: 2 * time.Minute,
	}
}

// Client sends a client agent's calls to the servers of its
// datacenter, found in LAN gossip, and fails over between them, as
// Consul's server manager does.
//
// Calls go to one server, picked at random and kept while it answers:
// reads from one server see its state move forward only, and clients
// spread over the servers by each picking at random (and picking again
// every RebalanceEvery). A call fails over to another server when its
// server cannot be reached, breaks the connection, stops answering pings
// (a hung server keeps its TCP connections open: only a ping tells it
// from a slow one), or answers that it knows no leader (it is cut off from
// the quorum). The failed server is passed over for FailedFor. The call
// keeps trying, server after server, until it has an answer or
// HoldTimeout (past any blocking wait) is spent.
//
// A write whose request may have reached a server that then failed has an
// unknown fate. Idempotent writes (rpc.Idempotent: registrations and
// deregistrations) are sent again: applying one twice is applying it once.
// Others end with an error wrapping rpc.ErrUnknownOutcome, which the HTTP
// API answers with a 503 saying so, once the call's deadline (sent with
// every attempt) has passed: see settle. An error the server returned (a
// *rpc.RemoteError other than "no leader") is final.
type Client struct {
	pool *rpc.Pool
	// servers returns the RPC addresses of the live servers of this
	// datacenter; called once per attempt, from any goroutine.
	servers func() []string
	logger  *slog.Logger
	cfg     Config
	// randN returns a number in [0, n); nil means math/rand/v2.IntN. A
	// hook for tests, to pick servers in a known order.
	randN func(n int) int

	mu          sync.Mutex
	preferred   string               // where calls go first; "" before the first call
	rebalanceAt time.Time            // when preferred is picked again
	failedAt    map[string]time.Time // servers that failed, and when
	aliveAt     map[string]time.Time // servers that answered a ping, and when the last one was sent
}

// NewClient returns a door that sends calls through pool to the servers
// servers returns (called once per attempt, from any goroutine: it must
// be cheap, and callers do not modify its slice).
func NewClient(cfg Config, pool *rpc.Pool, servers func() []string, logger *slog.Logger) *Client {
	return &Client{pool: pool, servers: servers, cfg: cfg, logger: logger}
}

// Preferred returns the server calls go to now ("" before the first
// call).
func (d *Client) Preferred() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.preferred
}

// RPC calls method on the preferred server, failing over as the type
// comment says.
func (d *Client) RPC(ctx context.Context, method string, args, reply any) error {
	hold := d.cfg.HoldTimeout
	if b, ok := args.(rpc.Blocking); ok {
		hold += b.MaxBlockingWait()
	}
	ctx, cancel := context.WithTimeout(ctx, hold) // keeps a caller's sooner deadline
	defer cancel()
	_, write := args.(rpc.Write)
	idem, idempotent := args.(rpc.Idempotent)
	// A blocking read sent again to another server asks it only for what
	// is left of the wait (its args are put back for the caller).
	var keepEnd func()
	if o, ok := args.(interface{ QueryOpts() *rpc.QueryOptions }); ok && o.QueryOpts().IsBlocking() {
		q := o.QueryOpts()
		saved, end := *q, q.WaitEnd(time.Now(), rpc.DefaultBlockingLimits())
		defer func() { *q = saved }()
		keepEnd = func() { q.KeepWaitEnd(end) }
	}
	if idempotent {
		// Every attempt carries one ID, so the servers apply the write
		// once however many attempts reach them.
		idem.SetRequestID(crand.Text())
	}
	tried := make(map[string]bool)
	wait := 50 * time.Millisecond
	var last error
	for {
		server, ok := d.pick(tried)
		if !ok {
			if len(tried) == 0 && last == nil {
				// None known yet (the agent is still joining): wait
				// for gossip to bring one, as long as the hold lasts.
				last = fmt.Errorf("%s: %w", method, ErrNoServers)
			}
			// Every server failed once, or none is known: start over
			// after a pause, which grows, while the hold lasts (an
			// election takes a moment).
			clear(tried)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				if errors.Is(last, ErrNoServers) {
					return last
				}
				return d.giveUp(method, write, last, ctx)
			}
			wait = min(2*wait, time.Second)
			continue
		}
		if errors.Is(last, ErrNoServers) {
			last = nil
		}
		tried[server] = true
		if last != nil && keepEnd != nil {
			keepEnd()
		}
		err := d.attempt(ctx, server, method, args, reply)
		if err == nil {
			d.succeeded(server)
			return nil
		}
		f := rpc.Classify(err)
		if !f.Elsewhere() {
			if write && !idempotent &&
				(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
				// The hold ran out with the write at a server that
				// neither did it nor refused it yet: it may have.
				return fmt.Errorf("%s: %w: %w", method, rpc.ErrUnknownOutcome, err)
			}
			return err
		}
		d.failed(server, err)
		last = err
		if write && !idempotent && !f.Unapplied() {
			settle(ctx)
			return fmt.Errorf("%s: %w: %w", method, rpc.ErrUnknownOutcome, err)
		}
		if ctx.Err() != nil {
			return d.giveUp(method, write, last, ctx)
		}
		d.logger.Debug("rpc to server failed, trying another", "peer", server, "method", method, "err", err)
	}
}

// settle waits until ctx's deadline, the one every attempt of the call
// carried, has passed (or ctx is canceled: nobody waits for the answer).
// A write whose fate is unknown is answered only then: its request, held
// by a hung server or on the way, is refused unrun by any server that
// reads it later (rpc's transit.go), and one a server started by then is
// being applied, so after the answer the write is applied or never will
// be, within the transit slack (docs/operating/troubleshooting.md gives the bound). Answering
// at once would leave it pending for the rest of the hold, free to land
// on top of newer writes.
func settle(ctx context.Context) { <-ctx.Done() }

// giveUp is the error of a call whose hold ran out (or whose caller went
// away) after last failed: for a write that reached a server, its fate is
// unknown.
func (d *Client) giveUp(method string, write bool, last error, ctx context.Context) error {
	switch {
	case last == nil:
		return fmt.Errorf("%s: %w", method, context.Cause(ctx))
	case write && !rpc.Classify(last).Unapplied():
		return fmt.Errorf("%s: %w: %w", method, rpc.ErrUnknownOutcome, last)
	}
	return fmt.Errorf("%s: no server answered in time: %w", method, last)
}

// attempt makes one call to server, pinging it while the call waits: a
// server that misses a ping is forgotten by the pool (every call on it
// fails at once).
func (d *Client) attempt(ctx context.Context, server, method string, args, reply any) error {
	since := time.Now()
	pings := rpc.Pings{After: d.cfg.ProbeAfter, Every: d.cfg.ProbeEvery, Timeout: d.cfg.ProbeTimeout}
	err := rpc.CallPinged(ctx, pings,
		func(ctx context.Context) error { return d.pool.Call(ctx, server, method, args, reply) },
		func(pctx context.Context) error {
			if err := d.probe(pctx, server, since); err != nil {
				if ctx.Err() == nil {
					d.pool.Forget(server)
				}
				return err
			}
			since = time.Now()
			return nil
		})
	if errors.Is(err, rpc.ErrServerHung) {
		return fmt.Errorf("%s to %s: %w", method, server, err)
	}
	return err
}

// probe pings server unless it answered a ping after since (many calls
// waiting on one server share a ping). A ping from before since proves
// nothing: the server may have hung since, which is what the caller,
// waiting from since on, wants to know.
func (d *Client) probe(ctx context.Context, server string, since time.Time) error {
	d.mu.Lock()
	fresh := d.aliveAt[server].After(since)
	d.mu.Unlock()
	if fresh {
		return nil
	}
	sent := time.Now()
	if err := d.pool.Probe(ctx, server); err != nil {
		return err
	}
	d.mu.Lock()
	if d.aliveAt == nil {
		d.aliveAt = make(map[string]time.Time)
	}
	d.aliveAt[server] = sent
	d.mu.Unlock()
	return nil
}

// pick returns the server the next attempt goes to: the preferred one if
// it is live, not tried by this call, not failed lately and not due for a
// rebalance; else one at random among those not tried, preferring those
// that did not fail lately. false when every live server was tried.
func (d *Client) pick(tried map[string]bool) (string, bool) {
	servers := d.servers()
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	var fresh, stale []string
	for _, s := range servers {
		switch {
		case tried[s]:
		case now.Sub(d.failedAt[s]) < d.cfg.FailedFor:
			stale = append(stale, s)
		default:
			fresh = append(fresh, s)
		}
	}
	if slices.Contains(fresh, d.preferred) && now.Before(d.rebalanceAt) {
		return d.preferred, true
	}
	candidates := fresh
	if len(candidates) == 0 {
		candidates = stale
	}
	if len(candidates) == 0 {
		return "", false
	}
	randN := d.randN
	if randN == nil {
		randN = rand.IntN
	}
	d.preferred = candidates[randN(len(candidates))]
	d.rebalanceAt = now.Add(d.cfg.RebalanceEvery + time.Duration(randN(int(d.cfg.RebalanceEvery/4)+1)))
	return d.preferred, true
}

func (d *Client) succeeded(server string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.failedAt, server)
}

func (d *Client) failed(server string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failedAt == nil {
		d.failedAt = make(map[string]time.Time)
	}
	d.failedAt[server] = time.Now()
	delete(d.aliveAt, server)
	if d.preferred == server {
		d.preferred = "" // the next call picks again
	}
}

// Stream starts method on the preferred server, failing over to the
// others while it cannot be started there (within ProbeAfter plus
// ProbeTimeout each: a server that does not answer a new session by
// then has hung), within HoldTimeout. The stream
// stays with its server: when Recv fails by the connection, or waits past
// its ctx's deadline (a stream method that stays quiet longer than it
// promised: a hung server), the server counts as failed, as a missed ping
// does for a call, so that the stream started next goes elsewhere.
func (d *Client) Stream(ctx context.Context, method string, args any) (rpc.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.HoldTimeout)
	defer cancel()
	tried := make(map[string]bool)
	var last error
	for {
		server, ok := d.pick(tried)
		if !ok {
			if last == nil {
				last = ErrNoServers
			}
			return nil, fmt.Errorf("%s: %w", method, last)
		}
		tried[server] = true
		// A server that hung before answering a new session holds up
		// the start (the pool sends nothing before the answer): it gets
		// as long as a call's ping would.
		sctx, scancel := context.WithTimeout(ctx, d.cfg.ProbeAfter+d.cfg.ProbeTimeout)
		st, err := d.pool.Stream(sctx, server, method, args)
		scancel()
		if err == nil {
			return &clientStream{Stream: st, door: d, server: server}, nil
		}
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w: %w", rpc.ErrTransport, rpc.ErrServerHung, err)
		}
		if !rpc.Classify(err).Elsewhere() || ctx.Err() != nil {
			return nil, err
		}
		d.failed(server, err)
		last = err
	}
}

// clientStream is a stream a Client started, which tells the door how
// its server does.
type clientStream struct {
	rpc.Stream
	door     *Client
	server   string
	answered bool
}

func (s *clientStream) Recv(ctx context.Context, reply any) error {
	err := s.Stream.Recv(ctx, reply)
	switch {
	case err == nil:
		if !s.answered {
			s.answered = true
			s.door.succeeded(s.server)
		}
	case errors.Is(err, context.DeadlineExceeded):
		s.door.pool.Forget(s.server) // every call waiting on it moves on too
		s.door.failed(s.server, rpc.ErrServerHung)
		return fmt.Errorf("%w: %w: %w", rpc.ErrTransport, rpc.ErrServerHung, err)
	default:
		if rpc.Classify(err).Elsewhere() {
			s.door.failed(s.server, err)
		}
	}
	return err
}
