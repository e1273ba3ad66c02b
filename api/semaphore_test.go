package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
)

func newSemaphore(t *testing.T, c *api.Client, prefix string, limit int) *api.Semaphore {
	t.Helper()
	s, err := c.SemaphorePrefix(prefix, limit)
	if err != nil {
		t.Fatalf("SemaphorePrefix: %v", err)
	}
	return s
}

func TestSemaphoreLimitsHolders(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	a, b, x := newSemaphore(t, c, "pool", 2), newSemaphore(t, c, "pool", 2), newSemaphore(t, c, "pool", 2)
	lostA, err := a.Acquire(t.Context())
	if err != nil {
		t.Fatalf("a.Acquire: %v", err)
	}
	if _, err := b.Acquire(t.Context()); err != nil {
		t.Fatalf("b.Acquire: %v", err)
	}
	if _, err := a.Acquire(t.Context()); !errors.Is(err, api.ErrSemaphoreHeld) {
		t.Errorf("a.Acquire again: got %v, want ErrSemaphoreHeld", err)
	}

	// The lock key is Consul's shape, listing both sessions.
	pair, _, err := c.KV().Get(t.Context(), "pool/.lock", nil)
	if err != nil || pair == nil || pair.Flags != api.SemaphoreFlagValue {
		t.Fatalf("lock key: got %+v, %v", pair, err)
	}
	var lock struct {
		Limit   int
		Holders map[string]bool
	}
	if err := json.Unmarshal(pair.Value, &lock); err != nil || lock.Limit != 2 || len(lock.Holders) != 2 {
		t.Errorf("lock key value: got %s (%v)", pair.Value, err)
	}

	// Full: x waits.
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err = x.Acquire(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("x.Acquire while full: got %v, want a deadline error", err)
	}
	// The failed Acquire took its contender key away.
	keys, _, err := c.KV().Keys(t.Context(), "pool/", "", nil)
	if err != nil || len(keys) != 3 {
		t.Errorf("keys after x gave up: got %q, %v; want the lock key and two contenders", keys, err)
	}
	if err := a.Destroy(t.Context()); !errors.Is(err, api.ErrSemaphoreHeld) {
		t.Errorf("a.Destroy while held: got %v, want ErrSemaphoreHeld", err)
	}
	if err := x.Destroy(t.Context()); !errors.Is(err, api.ErrSemaphoreInUse) {
		t.Errorf("x.Destroy while held by others: got %v, want ErrSemaphoreInUse", err)
	}

	got := make(chan error, 1)
	go func() {
		_, err := x.Acquire(t.Context())
		got <- err
	}()
	if err := a.Release(t.Context()); err != nil {
		t.Fatalf("a.Release: %v", err)
	}
	if !closed(lostA, 5*time.Second) {
		t.Error("a's channel still open after Release")
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("x.Acquire: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("x did not get a slot within 20s of a's Release")
	}
	for _, s := range []*api.Semaphore{b, x} {
		if err := s.Release(t.Context()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	if err := x.Release(t.Context()); !errors.Is(err, api.ErrSemaphoreNotHeld) {
		t.Errorf("Release again: got %v, want ErrSemaphoreNotHeld", err)
	}
	if err := x.Destroy(t.Context()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if keys, _, err := c.KV().Keys(t.Context(), "pool/", "", nil); err != nil || len(keys) != 0 {
		t.Errorf("keys after Destroy: got %q, %v; want none", keys, err)
	}
	if sessions, _, err := c.Session().List(t.Context(), nil); err != nil || len(sessions) != 0 {
		t.Errorf("sessions: got %+v, %v; want none", sessions, err)
	}
}

func TestSemaphoreDeadHolderIsPruned(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	a, b := newSemaphore(t, c, "one", 1), newSemaphore(t, c, "one", 1)
	lostA, err := a.Acquire(t.Context())
	if err != nil {
		t.Fatalf("a.Acquire: %v", err)
	}
	var session string
	keys, _, err := c.KV().Keys(t.Context(), "one/", "", nil)
	for _, k := range keys {
		if k != "one/.lock" {
			session = strings.TrimPrefix(k, "one/")
		}
	}
	if err != nil || session == "" {
		t.Fatalf("keys: got %q, %v", keys, err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.Acquire(t.Context())
		got <- err
	}()
	// a's session ends: its contender key keeps no session, a loses the
	// slot and b, pruning a, takes it.
	if err := c.Session().Destroy(t.Context(), session, nil); err != nil {
		t.Fatal(err)
	}
	if !closed(lostA, 10*time.Second) {
		t.Error("a's channel still open 10s after its session ended")
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("b.Acquire: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("b did not get the slot within 20s of a's session ending")
	}
	if err := b.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(t.Context()); err != nil {
		t.Errorf("a.Release of a lost slot: %v", err)
	}
}

func TestSemaphoreLimitConflict(t *testing.T) {
	t.Parallel()
	c := devClient(t)
	a, b := newSemaphore(t, c, "lim", 2), newSemaphore(t, c, "lim", 3)
	if _, err := a.Acquire(t.Context()); err != nil {
		t.Fatalf("a.Acquire: %v", err)
	}
	_, err := b.Acquire(t.Context())
	if err == nil || !strings.Contains(err.Error(), "limit conflict") || !strings.Contains(err.Error(), "2") {
		t.Errorf("b.Acquire with another limit: got %v", err)
	}
	if err := a.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A lock key that is not a semaphore's.
	if err := c.KV().Put(t.Context(), &api.KVPair{Key: "other/.lock", Value: []byte("{}")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := newSemaphore(t, c, "other", 1).Acquire(t.Context()); !errors.Is(err, api.ErrSemaphoreConflict) {
		t.Errorf("Acquire on a foreign lock key: got %v, want ErrSemaphoreConflict", err)
	}
}

func TestSemaphoreOptsChecks(t *testing.T) {
	c, _ := kvAgent(t, 200, "")
	for _, opts := range []*api.SemaphoreOptions{nil, {Limit: 1}, {Prefix: "/", Limit: 1}, {Prefix: "p"}, {Prefix: "p", Limit: 1, SessionTTL: "x"}} {
		if _, err := c.SemaphoreOpts(opts); err == nil {
			t.Errorf("SemaphoreOpts(%+v): got nil error", opts)
		}
	}
}
