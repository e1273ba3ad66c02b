package compat_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/waittest"
	consul "github.com/hashicorp/consul/api"
)

// lockClients returns Consul's client and cairn's of one dev agent, once
// a session can be made there.
func lockClients(t *testing.T) (*consul.Client, *api.Client) {
	t.Helper()
	a := agenttest.Start(t, agenttest.Config(t))
	cc, err := consul.NewClient(&consul.Config{Address: a.HTTPAddr().String()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.DefaultConfig()
	cfg.Address = a.HTTPAddr().String()
	ours, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	waittest.For(t, 30*time.Second, "a session on the agent's node", func() error {
		id, _, err := cc.Session().Create(nil, nil)
		if err != nil {
			return err
		}
		_, err = cc.Session().Destroy(id, nil)
		return err
	})
	return cc, ours
}

// TestConsulLockInteroperates: Consul's api.Lock and cairn's api.Lock on
// one key exclude each other and hand the lock over both ways.
func TestConsulLockInteroperates(t *testing.T) {
	t.Parallel()
	cc, ours := lockClients(t)
	theirs, err := cc.LockKey("shared/leader")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := ours.LockKey("shared/leader")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.Lock(nil); err != nil {
		t.Fatalf("Consul's Lock: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err = mine.Lock(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cairn's Lock while Consul's holds it: got %v, want a deadline error", err)
	}
	if err := theirs.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := mine.Lock(t.Context()); err != nil {
		t.Fatalf("cairn's Lock after Consul's Unlock: %v", err)
	}
	// Consul's waits now, and gets it once cairn's lets go.
	got := make(chan error, 1)
	go func() {
		_, err := theirs.Lock(nil)
		got <- err
	}()
	if err := mine.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Consul's Lock after cairn's Unlock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Consul's Lock did not get the lock within 30s of cairn's Unlock")
	}
	if err := theirs.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := mine.Destroy(t.Context()); err != nil {
		t.Errorf("cairn's Destroy of the free key: %v", err)
	}
}

// TestConsulSemaphoreInteroperates: Consul's api.Semaphore and cairn's
// api.Semaphore on one prefix share its slots.
func TestConsulSemaphoreInteroperates(t *testing.T) {
	t.Parallel()
	cc, ours := lockClients(t)
	theirs, err := cc.SemaphorePrefix("slots", 2)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := ours.SemaphorePrefix("slots", 2)
	if err != nil {
		t.Fatal(err)
	}
	third, err := ours.SemaphorePrefix("slots", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := theirs.Acquire(nil); err != nil {
		t.Fatalf("Consul's Acquire: %v", err)
	}
	if _, err := mine.Acquire(t.Context()); err != nil {
		t.Fatalf("cairn's Acquire beside Consul's: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err = third.Acquire(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third Acquire with both slots taken: got %v, want a deadline error", err)
	}
	other, err := ours.SemaphorePrefix("slots", 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(t.Context()); err == nil {
		t.Error("cairn's Acquire with another limit than Consul's: got nil error")
	}
	if err := theirs.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := third.Acquire(t.Context()); err != nil {
		t.Fatalf("a third Acquire after Consul's Release: %v", err)
	}
	for _, s := range []*api.Semaphore{mine, third} {
		if err := s.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := theirs.Destroy(); err != nil {
		t.Errorf("Consul's Destroy after cairn's Releases: %v", err)
	}
}
