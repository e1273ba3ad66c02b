package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Defaults of SemaphoreOptions, Consul's where Consul has one.
const (
	// DefaultSemaphoreSessionName names the session a Semaphore creates.
	DefaultSemaphoreSessionName = "cairn API Semaphore"
	// DefaultSemaphoreSessionTTL is the TTL of the session a Semaphore
	// creates; the Semaphore renews it at half that while it runs.
	DefaultSemaphoreSessionTTL = "15s"
	// DefaultSemaphoreWaitTime is how long one blocking read of the prefix
	// waits.
	DefaultSemaphoreWaitTime = 15 * time.Second
	// DefaultSemaphoreKey is the key under the prefix holding the
	// semaphore's limit and holders.
	DefaultSemaphoreKey = ".lock"
)

// SemaphoreFlagValue is the Flags of a semaphore's keys: Consul's value,
// so that a Semaphore of this package and one of Consul's api package
// share slots on the same prefix.
const SemaphoreFlagValue = 0xe0f69a2baa414de0

// The errors of Semaphore, matched with errors.Is.
var (
	// ErrSemaphoreHeld is the error of Acquire on a Semaphore holding a
	// slot, and of Destroy on one.
	ErrSemaphoreHeld = errors.New("semaphore lock already held")
	// ErrSemaphoreNotHeld is the error of Release on a Semaphore holding
	// no slot.
	ErrSemaphoreNotHeld = errors.New("semaphore not held")
	// ErrSemaphoreInUse is the error of Destroy while slots are held.
	ErrSemaphoreInUse = errors.New("semaphore in use")
	// ErrSemaphoreConflict is the error for a lock key whose Flags are not
	// SemaphoreFlagValue: the prefix is used otherwise.
	ErrSemaphoreConflict = errors.New("existing key does not match semaphore use")
)

// SemaphoreOptions configures a Semaphore. Prefix and Limit are required.
type SemaphoreOptions struct {
	// Prefix is the directory of the semaphore's keys: one contender key
	// per session (Prefix/<session>) and the lock key Prefix/.lock.
	Prefix string
	// Limit is how many may hold the semaphore at once. Every contender
	// on a prefix must give the same Limit.
	Limit int
	// Value is written to this contender's key.
	Value []byte
	// Session is an existing session to contend with; the Semaphore
	// neither renews nor destroys it. Empty: the Semaphore creates one
	// (tied to the agent's node), renews it, and destroys it on Release.
	Session string
	// SessionName and SessionTTL are those of the session the Semaphore
	// creates; empty means DefaultSemaphoreSessionName and
	// DefaultSemaphoreSessionTTL.
	SessionName string
	SessionTTL  string
	// MonitorRetries, MonitorRetryTime and Logger are as in LockOptions.
	MonitorRetries   int
	MonitorRetryTime time.Duration
	Logger           *slog.Logger
	// SemaphoreWaitTime bounds one blocking read of the prefix; 0 means
	// DefaultSemaphoreWaitTime.
	SemaphoreWaitTime time.Duration
}

// Semaphore lets up to Limit holders at once, with Consul's algorithm
// and flags (Consul's api.Semaphore): each contender's session acquires
// its own key under the prefix, and a slot is taken by adding the session
// to the holders listed in the lock key, written with check-and-set.
// Holders whose contender key no longer names a session (the session
// ended) are pruned by whoever writes the lock key next. Its methods may
// be called from any goroutine, but not concurrently on one Semaphore.
type Semaphore struct {
	c    *Client
	opts SemaphoreOptions

	mu      sync.Mutex
	held    bool
	session heldSession
	stop    context.CancelFunc
	wg      sync.WaitGroup // the watch
}

// semaphoreLock is the value of the lock key, in Consul's JSON shape.
type semaphoreLock struct {
	// Limit is the most holders at once.
	Limit int
	// Holders are the sessions holding a slot.
	Holders map[string]bool
}

// SemaphorePrefix returns a Semaphore of limit holders on prefix with
// every other option at its default.
func (c *Client) SemaphorePrefix(prefix string, limit int) (*Semaphore, error) {
	return c.SemaphoreOpts(&SemaphoreOptions{Prefix: prefix, Limit: limit})
}

// SemaphoreOpts returns a Semaphore configured by opts, with its zero
// fields at their defaults. It does not contact the agent.
func (c *Client) SemaphoreOpts(opts *SemaphoreOptions) (*Semaphore, error) {
	if opts == nil || strings.Trim(opts.Prefix, "/") == "" {
		return nil, errors.New("semaphore: prefix is empty")
	}
	o := *opts
	o.Prefix = strings.Trim(o.Prefix, "/")
	if o.Limit <= 0 {
		return nil, fmt.Errorf("semaphore: Limit %d: must be at least 1", o.Limit)
	}
	if o.SessionName == "" {
		o.SessionName = DefaultSemaphoreSessionName
	}
	if o.SessionTTL == "" {
		o.SessionTTL = DefaultSemaphoreSessionTTL
	}
	if ttl, err := time.ParseDuration(o.SessionTTL); err != nil || ttl <= 0 {
		return nil, fmt.Errorf("semaphore: SessionTTL %q: want a positive duration such as \"15s\"", o.SessionTTL)
	}
	if o.MonitorRetries < 0 {
		return nil, fmt.Errorf("semaphore: MonitorRetries %d: must not be negative", o.MonitorRetries)
	}
	if o.MonitorRetryTime <= 0 {
		o.MonitorRetryTime = DefaultMonitorRetryTime
	}
	if o.SemaphoreWaitTime <= 0 {
		o.SemaphoreWaitTime = DefaultSemaphoreWaitTime
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Semaphore{c: c, opts: o}, nil
}

func (s *Semaphore) lockKey() string { return s.opts.Prefix + "/" + DefaultSemaphoreKey }

func (s *Semaphore) contenderKey(session string) string { return s.opts.Prefix + "/" + session }

// Acquire blocks until the Semaphore holds a slot or ctx ends, and
// returns a channel closed when the slot is lost (the session ended, the
// holders no longer list it, or the agent could not be read within the
// retries allowed) or, after Release, no longer watched. ctx bounds only
// the acquiring. It returns ErrSemaphoreHeld when a slot is held,
// ErrSemaphoreConflict when the lock key is not a semaphore's, an error
// naming both limits when the lock key's Limit differs, and an error
// wrapping ctx's when ctx ended first. A failed Acquire deletes its
// contender key and destroys its session.
func (s *Semaphore) Acquire(ctx context.Context) (<-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return nil, ErrSemaphoreHeld
	}
	own, err := startSession(ctx, s.c, s.opts.Session, &SessionEntry{Name: s.opts.SessionName, TTL: s.opts.SessionTTL}, s.opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("semaphore %q: %w", s.opts.Prefix, err)
	}
	if err := s.acquire(ctx, own.id); err != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = s.c.KV().Delete(dctx, s.contenderKey(own.id), nil) // best effort
		cancel()
		own.end(ctx)
		return nil, fmt.Errorf("semaphore %q: %w", s.opts.Prefix, err)
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	lost := make(chan struct{})
	s.held, s.session, s.stop = true, own, stop
	s.wg.Go(func() {
		defer close(lost)
		s.watch(watchCtx, own.id)
	})
	return lost, nil
}

// acquire makes the contender key and waits until session is among the
// holders.
func (s *Semaphore) acquire(ctx context.Context, session string) error {
	kv := s.c.KV()
	made, err := kv.Acquire(ctx, &KVPair{Key: s.contenderKey(session), Value: s.opts.Value, Flags: SemaphoreFlagValue, Session: session}, nil)
	if err != nil {
		return fmt.Errorf("make the contender key: %w", err)
	}
	if !made {
		return fmt.Errorf("make the contender key %q: refused (the session holds no lock on it and cannot take one)", s.contenderKey(session))
	}
	var index uint64
	for {
		pairs, meta, err := kv.List(ctx, s.opts.Prefix+"/", &QueryOptions{WaitIndex: index, WaitTime: s.opts.SemaphoreWaitTime})
		if err != nil {
			return fmt.Errorf("read the prefix: %w", err)
		}
		lockPair, lock, err := s.readLock(pairs)
		if err != nil {
			return err
		}
		if lock.Holders[session] {
			return nil // the session was given and already holds a slot
		}
		if len(lock.Holders) >= lock.Limit {
			index = nextIndex(index, meta)
			continue
		}
		lock.Holders[session] = true
		value, err := json.Marshal(lock)
		if err != nil {
			return fmt.Errorf("encode the lock key: %w", err)
		}
		var modify uint64
		if lockPair != nil {
			modify = lockPair.ModifyIndex
		}
		ok, err := kv.CAS(ctx, &KVPair{Key: s.lockKey(), Value: value, Flags: SemaphoreFlagValue, ModifyIndex: modify}, nil)
		if err != nil {
			return fmt.Errorf("write the lock key: %w", err)
		}
		if ok {
			return nil
		}
		index = 0 // another contender wrote it first: read it again
	}
}

// readLock finds the lock key among pairs, decodes it (a missing one is a
// new, empty lock of s's limit), checks it, and prunes the holders whose
// contender key no longer names a session.
func (s *Semaphore) readLock(pairs KVPairs) (*KVPair, *semaphoreLock, error) {
	var lockPair *KVPair
	alive := map[string]bool{}
	for _, p := range pairs {
		if p.Key == s.lockKey() {
			lockPair = p
			continue
		}
		if p.Session != "" {
			alive[p.Session] = true
		}
	}
	lock := &semaphoreLock{Limit: s.opts.Limit, Holders: map[string]bool{}}
	if lockPair != nil {
		if lockPair.Flags != SemaphoreFlagValue {
			return nil, nil, ErrSemaphoreConflict
		}
		if err := json.Unmarshal(lockPair.Value, lock); err != nil {
			return nil, nil, fmt.Errorf("decode the lock key %q: %w", s.lockKey(), err)
		}
		if lock.Holders == nil {
			lock.Holders = map[string]bool{}
		}
		if lock.Limit != s.opts.Limit {
			return nil, nil, fmt.Errorf("semaphore limit conflict: the lock key says %d, this contender %d", lock.Limit, s.opts.Limit)
		}
	}
	for h := range lock.Holders {
		// A holder's contender key is also under the prefix; one whose
		// key names no session is dead.
		if !alive[h] {
			delete(lock.Holders, h)
		}
	}
	return lockPair, lock, nil
}

// watch follows the prefix until session is no longer a live holder.
func (s *Semaphore) watch(ctx context.Context, session string) {
	kv := s.c.KV()
	check := func(ctx context.Context, index uint64, wait time.Duration) (bool, uint64, error) {
		pairs, meta, err := kv.List(ctx, s.opts.Prefix+"/", &QueryOptions{RequireConsistent: true, WaitIndex: index, WaitTime: wait})
		if err != nil {
			return false, 0, err
		}
		_, lock, err := s.readLock(pairs)
		if err != nil {
			return false, 0, err
		}
		return lock.Holders[session], nextIndex(index, meta), nil
	}
	mon := monitor{retries: s.opts.MonitorRetries, retryTime: s.opts.MonitorRetryTime, wait: s.opts.SemaphoreWaitTime,
		budget: confirmBudget(0),
		logger: s.opts.Logger.With("prefix", s.opts.Prefix)}
	mon.run(ctx, check)
}

// Release gives the slot back: it removes the session from the holders
// (check-and-set, retried on conflict), deletes the contender key, and
// destroys the session when the Semaphore created it. The lost channel
// closes. It returns ErrSemaphoreNotHeld when no slot is held.
func (s *Semaphore) Release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return ErrSemaphoreNotHeld
	}
	s.stop()
	s.wg.Wait()
	own := s.session
	s.held, s.session, s.stop = false, heldSession{}, nil
	own.stopRenewal()

	var errs []error
	if err := s.removeHolder(ctx, own.id); err != nil {
		errs = append(errs, fmt.Errorf("release semaphore %q: %w", s.opts.Prefix, err))
	}
	if err := s.c.KV().Delete(ctx, s.contenderKey(own.id), nil); err != nil {
		errs = append(errs, fmt.Errorf("release semaphore %q: delete the contender key: %w", s.opts.Prefix, err))
	}
	if own.created {
		if err := s.c.Session().Destroy(ctx, own.id, nil); err != nil {
			errs = append(errs, fmt.Errorf("release semaphore %q: destroy session %s: %w", s.opts.Prefix, own.id, err))
		}
	}
	return errors.Join(errs...)
}

// removeHolder takes session out of the lock key's holders.
func (s *Semaphore) removeHolder(ctx context.Context, session string) error {
	kv := s.c.KV()
	for {
		pair, _, err := kv.Get(ctx, s.lockKey(), nil)
		if err != nil {
			return fmt.Errorf("read the lock key: %w", err)
		}
		if pair == nil {
			return nil
		}
		if pair.Flags != SemaphoreFlagValue {
			return ErrSemaphoreConflict
		}
		var lock semaphoreLock
		if err := json.Unmarshal(pair.Value, &lock); err != nil {
			return fmt.Errorf("decode the lock key %q: %w", s.lockKey(), err)
		}
		if !lock.Holders[session] {
			return nil
		}
		delete(lock.Holders, session)
		value, err := json.Marshal(lock)
		if err != nil {
			return fmt.Errorf("encode the lock key: %w", err)
		}
		ok, err := kv.CAS(ctx, &KVPair{Key: s.lockKey(), Value: value, Flags: SemaphoreFlagValue, ModifyIndex: pair.ModifyIndex}, nil)
		if err != nil {
			return fmt.Errorf("write the lock key: %w", err)
		}
		if ok {
			return nil
		}
	}
}

// Destroy deletes the lock key when no live holder is listed, as a
// semaphore no longer used. It returns ErrSemaphoreHeld when this
// Semaphore holds a slot, ErrSemaphoreInUse when others do, and
// ErrSemaphoreConflict when the key is not a semaphore's; a missing lock
// key is not an error.
func (s *Semaphore) Destroy(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		return ErrSemaphoreHeld
	}
	kv := s.c.KV()
	pairs, _, err := kv.List(ctx, s.opts.Prefix+"/", nil)
	if err != nil {
		return fmt.Errorf("destroy semaphore %q: read the prefix: %w", s.opts.Prefix, err)
	}
	lockPair, lock, err := s.readLock(pairs)
	if err != nil {
		return fmt.Errorf("destroy semaphore %q: %w", s.opts.Prefix, err)
	}
	if lockPair == nil {
		return nil
	}
	if len(lock.Holders) > 0 {
		return ErrSemaphoreInUse
	}
	ok, err := kv.DeleteCAS(ctx, lockPair, nil)
	if err != nil {
		return fmt.Errorf("destroy semaphore %q: delete the lock key: %w", s.opts.Prefix, err)
	}
	if !ok {
		return ErrSemaphoreInUse
	}
	return nil
}
