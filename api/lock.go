package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of LockOptions, Consul's where Consul has one.
const (
	// DefaultLockSessionName names the session a Lock creates.
	DefaultLockSessionName = "cairn API Lock"
	// DefaultLockSessionTTL is the TTL of the session a Lock creates; the
	// Lock renews it at half that while it runs.
	DefaultLockSessionTTL = "15s"
	// DefaultLockWaitTime is how long one blocking read of the key waits,
	// while waiting for the lock and while watching it once held.
	DefaultLockWaitTime = 15 * time.Second
	// DefaultLockRetryTime is the pause before acquiring again a key that
	// is free but refused the lock: it is within the lock-delay of the
	// session that last held it.
	DefaultLockRetryTime = 5 * time.Second
	// DefaultMonitorRetryTime is the pause before the next read of a held
	// key after a read failed (see LockOptions.MonitorRetries).
	DefaultMonitorRetryTime = 2 * time.Second
)

// LockFlagValue is the Flags of a key used as a lock: Consul's value, so
// that a Lock of this package and one of Consul's api package exclude
// each other on the same key, and neither takes a key written otherwise.
const LockFlagValue = 0x2ddccbc058a50c18

// The errors of Lock. They are sentinels, matched with errors.Is.
var (
	// ErrLockHeld is the error of Lock on a Lock already held, and of
	// Destroy on one held.
	ErrLockHeld = errors.New("lock already held")
	// ErrLockNotHeld is the error of Unlock on a Lock not held.
	ErrLockNotHeld = errors.New("lock not held")
	// ErrLockConflict is the error for a key whose Flags are not
	// LockFlagValue: it is not a lock (or is a semaphore's).
	ErrLockConflict = errors.New("existing key does not match lock use")
	// ErrLockInUse is the error of Destroy for a key some session holds.
	ErrLockInUse = errors.New("lock in use")
)

// LockOptions configures a Lock. Only Key is required.
type LockOptions struct {
	// Key is the key locked, e.g. "service/web/leader".
	Key string
	// Value is written to the key when the lock is taken (and kept when
	// it is released), e.g. the holder's name.
	Value []byte
	// Session is an existing session to lock with. The Lock neither
	// renews nor destroys it. Empty: the Lock creates a session when it
	// locks (tied to the agent's node, so that the node failing ends it),
	// renews it, and destroys it on Unlock.
	Session string
	// SessionName names the session the Lock creates; empty means
	// DefaultLockSessionName.
	SessionName string
	// SessionTTL is the TTL of the session the Lock creates, e.g. "15s";
	// empty means DefaultLockSessionTTL.
	SessionTTL string
	// LockDelay is the lock-delay of the session the Lock creates: how
	// long the key stays unlockable by others after that session ends
	// without releasing it (its node failed). 0 means the servers'
	// default, 15s.
	LockDelay time.Duration
	// MonitorRetries is how many consecutive failed reads of the held key
	// (the agent unreachable, or answering 5xx) are retried, each after
	// MonitorRetryTime, before the lock counts as lost. 0 (Consul's
	// default) gives up at the first; the client's own retries of a read
	// (well under a second) come first either way.
	MonitorRetries int
	// MonitorRetryTime is the pause before such a retry; 0 means
	// DefaultMonitorRetryTime.
	MonitorRetryTime time.Duration
	// LockWaitTime bounds one blocking read of the key; 0 means
	// DefaultLockWaitTime. The watch of a held lock reads with at most a
	// third of half the lock-delay, and counts the lock lost once no read
	// has confirmed it for half the lock-delay: an agent that hangs
	// without closing its connection is given up before anyone else can
	// take the key.
	LockWaitTime time.Duration
	// LockRetryTime is the pause before trying again a key that is free
	// but refused the lock (a lock-delay); 0 means DefaultLockRetryTime.
	LockRetryTime time.Duration
	// Logger receives the Lock's debug and warning records (a failed
	// renewal, a retried read); nil discards them.
	Logger *slog.Logger
}

// Lock is a distributed mutual-exclusion lock on one key, with Consul's
// algorithm and flags (Consul's api.Lock): a session acquires the key;
// others wait on it with blocking reads; once held the key is watched,
// and the lock counts as lost when the key no longer names the session
// (the session ended: its node failed, its TTL ran out, someone destroyed
// it) or the agent cannot be read within the retries allowed. Its
// methods may be called from any goroutine, but not concurrently with
// each other on one Lock (a second call waits for the first).
type Lock struct {
	c    *Client
	opts LockOptions

	mu      sync.Mutex
	held    bool
	session string // while held: the session holding the key
	created bool   // the session is the Lock's own (renewed, destroyed)
	stop    context.CancelFunc
	wg      sync.WaitGroup // the watch and the renewal
}

// LockKey returns a Lock on key with every other option at its default.
func (c *Client) LockKey(key string) (*Lock, error) {
	return c.LockOpts(&LockOptions{Key: key})
}

// LockOpts returns a Lock configured by opts, with its zero fields at
// their defaults. It does not contact the agent.
func (c *Client) LockOpts(opts *LockOptions) (*Lock, error) {
	if opts == nil || opts.Key == "" {
		return nil, errors.New("lock: key is empty")
	}
	o := *opts
	if o.SessionName == "" {
		o.SessionName = DefaultLockSessionName
	}
	if o.SessionTTL == "" {
		o.SessionTTL = DefaultLockSessionTTL
	}
	ttl, err := time.ParseDuration(o.SessionTTL)
	if err != nil || ttl <= 0 {
		return nil, fmt.Errorf("lock: SessionTTL %q: want a positive duration such as \"15s\"", o.SessionTTL)
	}
	if o.MonitorRetries < 0 {
		return nil, fmt.Errorf("lock: MonitorRetries %d: must not be negative", o.MonitorRetries)
	}
	if o.MonitorRetryTime <= 0 {
		o.MonitorRetryTime = DefaultMonitorRetryTime
	}
	if o.LockWaitTime <= 0 {
		o.LockWaitTime = DefaultLockWaitTime
	}
	if o.LockRetryTime <= 0 {
		o.LockRetryTime = DefaultLockRetryTime
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Lock{c: c, opts: o}, nil
}

// Lock blocks until the lock is acquired or ctx ends, and returns a
// channel that is closed when the lock is lost or, after Unlock, no longer
// watched. Whoever holds the lock must stop acting on it as soon as the
// channel closes: another holder may follow after the lock-delay. ctx
// bounds only the acquiring; the watch runs until Unlock. It returns
// ErrLockHeld when the Lock is held, ErrLockConflict when the key is not
// a lock, and an error wrapping ctx's when ctx ended first. A failed Lock
// leaves nothing behind (its session is destroyed).
func (l *Lock) Lock(ctx context.Context) (<-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return nil, ErrLockHeld
	}
	own, err := startSession(ctx, l.c, l.opts.Session, &SessionEntry{Name: l.opts.SessionName, TTL: l.opts.SessionTTL, LockDelay: l.opts.LockDelay}, l.opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("lock %q: %w", l.opts.Key, err)
	}
	if err := l.acquire(ctx, own.id); err != nil {
		own.end(ctx)
		return nil, fmt.Errorf("lock %q: %w", l.opts.Key, err)
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	lost := make(chan struct{})
	l.held, l.session, l.created, l.stop = true, own.id, own.created, func() {
		stop()
		own.stopRenewal()
	}
	l.wg.Go(func() {
		defer close(lost)
		l.watch(watchCtx, own.id)
	})
	return lost, nil
}

// acquire waits until session holds the key.
func (l *Lock) acquire(ctx context.Context, session string) error {
	kv := l.c.KV()
	var index uint64
	for {
		pair, meta, err := kv.Get(ctx, l.opts.Key, &QueryOptions{WaitIndex: index, WaitTime: l.opts.LockWaitTime})
		if err != nil {
			return fmt.Errorf("read the key: %w", err)
		}
		if pair != nil && pair.Flags != LockFlagValue {
			return ErrLockConflict
		}
		switch {
		case pair != nil && pair.Session == session:
			return nil // already ours: the session was given and holds it
		case pair != nil && pair.Session != "":
			index = nextIndex(index, meta)
			continue // held: wait for a change
		}
		ok, err := kv.Acquire(ctx, &KVPair{Key: l.opts.Key, Value: l.opts.Value, Flags: LockFlagValue, Session: session}, nil)
		if err != nil {
			return fmt.Errorf("acquire the key: %w", err)
		}
		if ok {
			return nil
		}
		// Refused though free when read: another contender was faster,
		// or the key is within a lock-delay. Read again at once; a key
		// still free is the lock-delay, tried again after a pause.
		pair, _, err = kv.Get(ctx, l.opts.Key, nil)
		if err != nil {
			return fmt.Errorf("read the key: %w", err)
		}
		if pair == nil || pair.Session == "" {
			l.opts.Logger.Debug("lock refused within a lock-delay; retrying", "key", l.opts.Key, "after", l.opts.LockRetryTime)
			if err := sleepCtx(ctx, l.opts.LockRetryTime); err != nil {
				return err
			}
		}
		index = 0
	}
}

// nextIndex is the index to block on after an answer with meta: its
// LastIndex, or 0 (no blocking) when the index went backwards or is
// missing, as QueryMeta.LastIndex asks.
func nextIndex(prev uint64, meta *QueryMeta) uint64 {
	if meta == nil || meta.LastIndex < prev {
		return 0
	}
	return meta.LastIndex
}

// watch follows the held key with consistent blocking reads until ctx
// ends or the key no longer names session, or reads fail more times in a
// row than MonitorRetries allows.
func (l *Lock) watch(ctx context.Context, session string) {
	kv := l.c.KV()
	check := func(ctx context.Context, index uint64, wait time.Duration) (bool, uint64, error) {
		pair, meta, err := kv.Get(ctx, l.opts.Key, &QueryOptions{RequireConsistent: true, WaitIndex: index, WaitTime: wait})
		if err != nil {
			return false, 0, err
		}
		return pair != nil && pair.Session == session, nextIndex(index, meta), nil
	}
	mon := monitor{retries: l.opts.MonitorRetries, retryTime: l.opts.MonitorRetryTime, wait: l.opts.LockWaitTime,
		budget: confirmBudget(l.opts.LockDelay),
		logger: l.opts.Logger.With("key", l.opts.Key)}
	mon.run(ctx, check)
}

// Unlock releases the key (keeping Value) and, when the Lock created its
// session, destroys the session. The lost channel closes. It returns
// ErrLockNotHeld when the Lock is not held; a lock already lost is
// released without error (the release changes nothing).
func (l *Lock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return ErrLockNotHeld
	}
	l.stop()
	l.wg.Wait()
	session, created := l.session, l.created
	l.held, l.session, l.created, l.stop = false, "", false, nil

	var errs []error
	if _, err := l.c.KV().Release(ctx, &KVPair{Key: l.opts.Key, Value: l.opts.Value, Flags: LockFlagValue, Session: session}, nil); err != nil {
		errs = append(errs, fmt.Errorf("unlock %q: release: %w", l.opts.Key, err))
	}
	if created {
		if err := l.c.Session().Destroy(ctx, session, nil); err != nil {
			errs = append(errs, fmt.Errorf("unlock %q: destroy session %s: %w", l.opts.Key, session, err))
		}
	}
	return errors.Join(errs...)
}

// Destroy deletes the key when no session holds it, as a lock no longer
// used. It returns ErrLockHeld when this Lock holds it, ErrLockInUse when
// another session does, and ErrLockConflict when the key is not a lock; a
// key that does not exist is not an error.
func (l *Lock) Destroy(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return ErrLockHeld
	}
	kv := l.c.KV()
	pair, _, err := kv.Get(ctx, l.opts.Key, nil)
	if err != nil {
		return fmt.Errorf("destroy lock %q: read the key: %w", l.opts.Key, err)
	}
	switch {
	case pair == nil:
		return nil
	case pair.Flags != LockFlagValue:
		return ErrLockConflict
	case pair.Session != "":
		return ErrLockInUse
	}
	ok, err := kv.DeleteCAS(ctx, pair, nil)
	if err != nil {
		return fmt.Errorf("destroy lock %q: delete the key: %w", l.opts.Key, err)
	}
	if !ok {
		return ErrLockInUse // written since it was read: taken again
	}
	return nil
}

// monitor is the watch of a held lock or semaphore slot, shared by Lock
// and Semaphore.
type monitor struct {
	retries   int
	retryTime time.Duration
	wait      time.Duration // one blocking read's wait, at most budget/3
	// budget is how long the hold may go unconfirmed by a read before
	// it counts as lost, whatever the retries: an agent that hangs
	// without closing its connection is given up well before others
	// can take the lock (see confirmBudget).
	budget time.Duration
	logger *slog.Logger
}

// serverLockDelay is the servers' lock-delay of a session that names
// none.
const serverLockDelay = 15 * time.Second

// confirmBudget is how long a hold may go unconfirmed: half the session's
// lock-delay (0: the servers' default). Others can take the key only once
// the session has ended (its node found failed, which takes gossip some
// seconds) and the lock-delay has passed after that, so a holder that
// gives up within half of it has the other half, at least, to stop what
// it runs under the lock. At least a second.
func confirmBudget(lockDelay time.Duration) time.Duration {
	if lockDelay <= 0 {
		lockDelay = serverLockDelay
	}
	return max(lockDelay/2, time.Second)
}

// run calls check with the last index until ctx ends, check reports the
// hold gone, check fails more than m.retries times in a row with an error
// worth retrying (the agent unreachable or a 5xx; any other error ends it
// at once), or no call has confirmed the hold for m.budget. Each call
// waits at most a third of the budget, and is cut at the budget's end, so
// an agent that hangs cannot keep the holder believing.
func (m monitor) run(ctx context.Context, check func(ctx context.Context, index uint64, wait time.Duration) (bool, uint64, error)) {
	var index uint64
	failures := 0
	wait := min(m.wait, m.budget/3)
	confirmed := time.Now() // the hold was just taken
	for ctx.Err() == nil {
		left := m.budget - time.Since(confirmed)
		if left <= 0 {
			m.logger.Warn("lock lost: not confirmed by the agent in time", "budget", m.budget)
			return
		}
		callCtx, cancel := context.WithTimeout(ctx, min(wait+wait/16+2*time.Second, left))
		held, next, err := check(callCtx, index, wait)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if !held {
				m.logger.Warn("lock lost: the key no longer names our session")
				return
			}
			index, failures, confirmed = next, 0, time.Now()
			continue
		}
		failures++
		if failures > m.retries || !retryable(err) || time.Since(confirmed) >= m.budget {
			m.logger.Warn("lock lost: cannot read the key", "err", err, "attempts", failures)
			return
		}
		m.logger.Debug("reading the held key failed; retrying", "err", err, "after", m.retryTime)
		index = 0
		if sleepCtx(ctx, min(m.retryTime, max(m.budget-time.Since(confirmed), 0))) != nil {
			return
		}
	}
}

// retryable reports whether a failed read may succeed if sent again: the
// agent was not reached, or answered with a server error (no leader yet).
func retryable(err error) bool {
	var unreachable *UnreachableError
	var status *StatusError
	return errors.As(err, &unreachable) || errors.As(err, &status) && status.Code >= 500 ||
		errors.Is(err, context.DeadlineExceeded)
}

// sleepCtx waits d or until ctx ends, and returns ctx's error then. It
// is internal/clock.Sleep's twin: api stays on the standard library, so
// that a program using the client takes nothing else of cairn's.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// heldSession is the session a Lock or Semaphore holds with: the one it
// was given, or one it created and renews until stopRenewal.
type heldSession struct {
	id      string
	created bool
	client  *Client
	cancel  context.CancelFunc
	wg      *sync.WaitGroup
}

// startSession returns given when it is not empty; otherwise it creates
// a session from se (on the agent's node, tied to its serfHealth check)
// and starts renewing it at half its TTL.
func startSession(ctx context.Context, c *Client, given string, se *SessionEntry, logger *slog.Logger) (heldSession, error) {
	if given != "" {
		return heldSession{id: given}, nil
	}
	id, err := c.Session().Create(ctx, se, nil)
	if err != nil {
		return heldSession{}, fmt.Errorf("create session: %w", err)
	}
	ttl, _ := time.ParseDuration(se.TTL) // checked by the constructors
	renewCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	wg := &sync.WaitGroup{}
	wg.Go(func() { renewSession(renewCtx, c, id, ttl, logger) })
	return heldSession{id: id, created: true, client: c, cancel: cancel, wg: wg}, nil
}

// stopRenewal stops renewing a created session and waits for the renewal
// to end.
func (h heldSession) stopRenewal() {
	if h.created {
		h.cancel()
		h.wg.Wait()
	}
}

// end stops the renewal and destroys a created session, with a context of
// its own when ctx has ended (a Lock that timed out must not leave its
// session behind).
func (h heldSession) end(ctx context.Context) {
	if !h.created {
		return
	}
	h.stopRenewal()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = h.client.Session().Destroy(dctx, h.id, nil) // best effort: its TTL ends it otherwise
}

// renewSession renews session id every ttl/2 until ctx ends or the session
// is gone. A failed renewal is retried sooner (every ttl/10); once the
// session is reported gone, renewing stops, and the holder's watch sees
// the lock lost.
func renewSession(ctx context.Context, c *Client, id string, ttl time.Duration, logger *slog.Logger) {
	next := ttl / 2
	for sleepCtx(ctx, next) == nil {
		e, err := c.Session().Renew(ctx, id, nil)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logger.Warn("session renewal failed; retrying", "session", id, "err", err)
			next = max(ttl/10, 100*time.Millisecond)
		case e == nil:
			logger.Warn("session gone; renewal stopped", "session", id)
			return
		default:
			next = ttl / 2
		}
	}
}
