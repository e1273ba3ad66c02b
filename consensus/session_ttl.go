package consensus

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/clock"
)

// This file holds the leader's session TTL timers. A session with a TTL
// ends when it has not been renewed for sessionTTLMultiplier times its
// TTL, as Consul's does. Only the leader keeps the timers; a new leader
// starts every session's anew, at its full value, as Consul does, so a
// failover only ever lengthens a session's life. On expiry the leader
// destroys the session through Raft, like any other write.

// sessionTTLMultiplier is how many TTLs a session lives without a renew
// (Consul's SessionTTLMultiplier).
const sessionTTLMultiplier = 2

// sessionTimers is the deadline of each session with a TTL, while this
// server's leader duties run them (deadline not nil). Safe for concurrent
// use: the Session endpoint resets and removes, the leader's TTL loop
// (runSessionTTLs) starts, stops and expires.
type sessionTimers struct {
	mu       sync.Mutex
	deadline map[string]time.Time
	// wake has room for one signal: a deadline changed.
	wake chan struct{}
}

func (t *sessionTimers) signal() {
	select {
	case t.wakeCh() <- struct{}{}:
	default:
	}
}

// wakeCh returns the wake channel, made on first use; t.mu must not be
// held.
func (t *sessionTimers) wakeCh() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wake == nil {
		t.wake = make(chan struct{}, 1)
	}
	return t.wake
}

// reset restarts the timer of session id at now; nothing when the timers
// do not run (runSessionTTLs starts every session's when they start).
func (t *sessionTimers) reset(id string, ttl time.Duration, now time.Time) {
	if ttl <= 0 {
		return
	}
	t.mu.Lock()
	running := t.deadline != nil
	if running {
		t.deadline[id] = now.Add(sessionTTLMultiplier * ttl)
	}
	t.mu.Unlock()
	if running {
		t.signal()
	}
}

// remove forgets session id's timer.
func (t *sessionTimers) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.deadline, id)
}

// start runs the timers, each session's with its full TTL from now.
func (t *sessionTimers) start(sessions []*catalog.Session, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadline = make(map[string]time.Time, len(sessions))
	for _, s := range sessions {
		if ttl := s.TTLDuration(); ttl > 0 {
			t.deadline[s.ID] = now.Add(sessionTTLMultiplier * ttl)
		}
	}
}

// stop forgets every timer: leadership is over.
func (t *sessionTimers) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadline = nil
}

// expired removes and returns the sessions whose deadline is not after
// now, and returns the next deadline of the rest (zero: none).
func (t *sessionTimers) expired(now time.Time) (ids []string, next time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, d := range t.deadline {
		if !d.After(now) {
			ids = append(ids, id)
			delete(t.deadline, id)
		} else if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return ids, next
}

// runSessionTTLs runs the session TTL timers while this server leads,
// until ctx ends (lead cancels it when the term does): it waits for the
// store to hold every earlier write (a barrier), starts every session's
// timer, and destroys each session whose timer runs out.
func (l *Leader) runSessionTTLs(ctx context.Context) {
	t := &l.s.ttls
	defer t.stop()
	for backoff := retryMin; ; backoff = min(2*backoff, l.cfg.ReconcileInterval) {
		err := l.s.barrier(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(err, ErrNotLeader) {
			return
		}
		l.warn("session ttl:"+err.Error(), "session TTLs: barrier failed; retrying", "err", err)
		if !clock.Sleep(ctx, backoff) {
			return
		}
	}
	_, all, err := l.s.Store().SessionList(nil, "")
	if err != nil {
		l.warn("session ttl:"+err.Error(), "session TTLs: list sessions failed", "err", err)
		return
	}
	t.start(all, time.Now())
	wake := t.wakeCh()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ids, next := t.expired(time.Now())
		for _, id := range ids {
			err := l.s.ApplySession(ctx, &catalog.SessionRequest{Op: catalog.SessionDestroy, Session: catalog.Session{ID: id}})
			if err == nil {
				l.logger.Info("session TTL expired; destroyed", "session", id)
				continue
			}
			if ctx.Err() != nil || errors.Is(err, ErrNotLeader) {
				return
			}
			l.warn("session ttl:"+err.Error(), "session TTLs: destroy failed; retrying", "session", id, "err", err)
			t.retry(id, time.Now().Add(retryMin))
			next = time.Now().Add(retryMin)
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
	}
}

// retry sets session id's deadline to at, if the timers run.
func (t *sessionTimers) retry(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.deadline != nil {
		t.deadline[id] = at
	}
}

// barrier waits until this server's store holds every write committed
// before now; it fails with ErrNotLeader where it does not lead.
func (s *Server) barrier(ctx context.Context) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	timeout, err := s.waitBound(ctx)
	if err != nil {
		return err
	}
	return raftError(s.raft.Barrier(timeout).Error())
}
