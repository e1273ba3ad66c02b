package compat_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// createSession creates a session through Consul's client, waiting for the
// client agent's node and its serfHealth check to be in the catalog (the
// leader registers them once gossip has the agent).
func createSession(t *testing.T, c *consul.Client, se *consul.SessionEntry) string {
	t.Helper()
	var id string
	waittest.For(t, 30*time.Second, "a session on the client agent's node", func() error {
		var err error
		id, _, err = c.Session().Create(se, nil)
		return err
	})
	return id
}

// TestConsulClientSessions walks Consul's client through sessions and locks
// on a three-server cluster, through a client agent: Create (defaults and
// a TTL), Info, List, Node, KV Acquire and Release between two sessions,
// Destroy releasing a lock, Renew of a live and of a destroyed session, a
// TTL session ending two TTLs after its creation.
func TestConsulClientSessions(t *testing.T) {
	t.Parallel()
	c := newConsulClusterClient(t)
	ss, kv := c.Session(), c.KV()

	a := createSession(t, c, &consul.SessionEntry{Name: "a", LockDelay: time.Millisecond})
	// A session never renewed ends two TTLs later (the leader's timer),
	// releasing its lock.
	expiring, _, err := ss.Create(&consul.SessionEntry{Name: "expiring", TTL: "10s"}, nil)
	if err != nil {
		t.Fatalf("Create(expiring): %v", err)
	}
	created := time.Now()
	if ok, _, err := kv.Acquire(&consul.KVPair{Key: "expiring/lock", Session: expiring}, nil); err != nil || !ok {
		t.Fatalf("Acquire for the expiring session: got %v, %v", ok, err)
	}
	b, _, err := ss.Create(&consul.SessionEntry{Name: "b", TTL: "10s", Behavior: consul.SessionBehaviorRelease}, nil)
	if err != nil {
		t.Fatalf("Create(b): %v", err)
	}
	info, meta, err := ss.Info(a, nil)
	if err != nil || info == nil {
		t.Fatalf("Info(a): got %+v, %v", info, err)
	}
	if info.ID != a || info.Name != "a" || info.Node != "c1" || info.LockDelay != time.Millisecond ||
		info.Behavior != "release" || !slices.Equal(info.NodeChecks, []string{"serfHealth"}) || info.CreateIndex == 0 || meta.LastIndex == 0 {
		t.Errorf("Info(a): got %+v at %d", info, meta.LastIndex)
	}
	if got, _, err := ss.Info("00000000-0000-4000-8000-000000000000", nil); err != nil || got != nil {
		t.Errorf("Info(missing): got %+v, %v; want nil", got, err)
	}
	ids := func(es []*consul.SessionEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		slices.Sort(out)
		return out
	}
	want := []string{a, b, expiring}
	slices.Sort(want)
	if all, _, err := ss.List(nil); err != nil || !slices.Equal(ids(all), want) {
		t.Errorf("List: got %v, %v; want %v", ids(all), err, want)
	}
	if mine, _, err := ss.Node("c1", nil); err != nil || !slices.Equal(ids(mine), want) {
		t.Errorf("Node(c1): got %v, %v; want %v", ids(mine), err, want)
	}

	acquire := func(session, value string) bool {
		t.Helper()
		ok, _, err := kv.Acquire(&consul.KVPair{Key: "service/leader", Value: []byte(value), Session: session}, nil)
		if err != nil {
			t.Fatalf("Acquire(%s): %v", value, err)
		}
		return ok
	}
	if !acquire(a, "a") {
		t.Fatal("Acquire by a of a free key: got false")
	}
	if acquire(b, "b") {
		t.Error("Acquire by b of a's key: got true")
	}
	p, _, err := kv.Get("service/leader", nil)
	if err != nil || p == nil || p.Session != a || p.LockIndex != 1 || string(p.Value) != "a" {
		t.Fatalf("Get of a's key: got %+v, %v; want session a, LockIndex 1", p, err)
	}
	if ok, _, err := kv.Release(&consul.KVPair{Key: "service/leader", Session: b}, nil); err != nil || ok {
		t.Errorf("Release by b of a's key: got %v, %v; want false", ok, err)
	}
	if ok, _, err := kv.Release(&consul.KVPair{Key: "service/leader", Value: []byte("free"), Session: a}, nil); err != nil || !ok {
		t.Errorf("Release by a: got %v, %v; want true", ok, err)
	}
	if !acquire(b, "b") {
		t.Error("Acquire by b after a's release: got false")
	}
	if e, _, err := ss.Renew(b, nil); err != nil || e == nil || e.ID != b || e.TTL != "10s" {
		t.Errorf("Renew(b): got %+v, %v; want b with TTL 10s", e, err)
	}
	if _, err := ss.Destroy(b, nil); err != nil {
		t.Fatalf("Destroy(b): %v", err)
	}
	p, _, err = kv.Get("service/leader", nil)
	if err != nil || p == nil || p.Session != "" || p.LockIndex != 2 {
		t.Errorf("Get after the holder's Destroy: got %+v, %v; want released, LockIndex 2", p, err)
	}
	if e, _, err := ss.Renew(b, nil); err != nil || e != nil {
		t.Errorf("Renew of a destroyed session: got %+v, %v; want nil", e, err)
	}
	if _, _, err := ss.Create(&consul.SessionEntry{Node: "nosuch"}, nil); err == nil {
		t.Error("Create on a missing node: got nil error")
	}

	waittest.For(t, 60*time.Second, "the expiring session to end", func() error {
		e, _, err := ss.Info(expiring, nil)
		if err == nil && e != nil {
			err = fmt.Errorf("still there after %s", time.Since(created).Round(time.Second))
		}
		return err
	})
	if lived := time.Since(created); lived < 19*time.Second { // 20s from the leader's apply, before the answer
		t.Errorf("the expiring session (TTL 10s) ended after %s, want at least 20s", lived)
	}
	if p, _, err := kv.Get("expiring/lock", nil); err != nil || p == nil || p.Session != "" {
		t.Errorf("the expiring session's key after it ended: got %+v, %v; want released", p, err)
	}
}

// TestConsulClientLockKey: Consul's Lock helper takes a free lock; a second
// Lock on the key waits while the first holds it, and takes it once the
// first unlocks.
func TestConsulClientLockKey(t *testing.T) {
	t.Parallel()
	c := newConsulClusterClient(t)
	createSession(t, c, nil) // the client agent's node is in the catalog

	first, err := c.LockKey("service/lock")
	if err != nil {
		t.Fatal(err)
	}
	lost, err := first.Lock(nil)
	if err != nil || lost == nil {
		t.Fatalf("first Lock: got %v, %v", lost, err)
	}
	p, _, err := c.KV().Get("service/lock", nil)
	if err != nil || p == nil || p.Session == "" {
		t.Fatalf("the lock key after the first Lock: got %+v, %v; want it held", p, err)
	}
	holder := p.Session

	second, err := c.LockKey("service/lock")
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		lost <-chan struct{}
		err  error
	}
	done := make(chan result, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ch, err := second.Lock(stop)
		done <- result{ch, err}
	})
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	// The second Lock has its session once there are three (createSession's,
	// the first's and its own); the key stays with the first.
	waittest.For(t, 30*time.Second, "the second Lock's session", func() error {
		all, _, err := c.Session().List(nil)
		if err == nil && len(all) < 3 {
			err = fmt.Errorf("%d sessions", len(all))
		}
		return err
	})
	select {
	case r := <-done:
		t.Fatalf("second Lock returned while the first held it: %v, %v", r.lost, r.err)
	default:
	}
	if p, _, err := c.KV().Get("service/lock", nil); err != nil || p == nil || p.Session != holder {
		t.Errorf("the lock key while the first holds it: got %+v, %v; want session %s", p, err, holder)
	}

	if err := first.Unlock(); err != nil {
		t.Fatalf("first Unlock: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.lost == nil {
			t.Fatalf("second Lock: got %v, %v", r.lost, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("second Lock did not return within 30s of the first Unlock")
	}
	p, _, err = c.KV().Get("service/lock", nil)
	if err != nil || p == nil || p.Session == "" || p.Session == holder || p.LockIndex != 2 {
		t.Errorf("the lock key after the second Lock: got %+v, %v; want held by another session, LockIndex 2", p, err)
	}
	if err := second.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
}
