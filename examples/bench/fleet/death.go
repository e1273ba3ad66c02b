package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
)

// death stops victim without leaving and measures how long until the
// leader marks it critical and until every other member's DNS has stopped
// answering for its service; then starts it again and measures how long
// until every member answers for it again.
func (b *bench) death(ctx context.Context, victim *member, p *point) error {
	var observers []*member
	for _, m := range b.f.live() {
		if m != victim {
			observers = append(observers, m)
		}
	}
	name := victim.service() + ".service.cluster"
	if err := b.everyoneAnswers(ctx, observers, name, false); err != nil {
		return err
	}
	begin := time.Now()
	if err := b.f.kill(victim); err != nil {
		return err
	}
	var critical time.Duration
	criticalErr := make(chan error, 1)
	go func() {
		criticalErr <- b.c.Poll(ctx, 50*time.Millisecond, victim.name+" critical in the leader's catalog", func(ctx context.Context) (bool, error) {
			ok, err := b.criticalOnLeader(ctx, victim)
			critical = time.Since(begin)
			return ok, err
		})
	}()
	gone, err := b.untilAllStop(ctx, observers, name, begin)
	if err != nil {
		return err
	}
	if err := <-criticalErr; err != nil {
		return err
	}
	slices.Sort(gone)
	p.critical = append(p.critical, critical)
	p.gone = append(p.gone, gone[len(gone)-1])

	restart := time.Now()
	if err := b.f.start(ctx, victim); err != nil {
		return err
	}
	if err := b.registerOwn(ctx)(victim); err != nil {
		return err
	}
	if err := b.everyoneAnswers(ctx, observers, name, true); err != nil {
		return err
	}
	back := time.Since(restart)
	p.back = append(p.back, back)
	fmt.Printf("  death of %s: critical on the leader after %s; gone from %d members' DNS after p50 %.1fs, max %.1fs; started again, back in every member's DNS after %s\n",
		victim.name, critical.Round(time.Millisecond), len(gone), loopback.Ms(gone, 0.5)/1000, loopback.Ms(gone, 1)/1000, back.Round(time.Millisecond))
	return b.settle(ctx)
}

// everyoneAnswers waits until every member of ms answers name with a
// record, asking those that do not yet every 100ms when the caller times
// the wait, every 250ms when it is a warm-up.
func (b *bench) everyoneAnswers(ctx context.Context, ms []*member, name string, timed bool) error {
	every := 250 * time.Millisecond
	if timed {
		every = 100 * time.Millisecond
	}
	pending := slices.Clone(ms)
	return b.c.Poll(ctx, every, "every member answering for "+name, func(ctx context.Context) (bool, error) {
		var mu sync.Mutex
		var still []*member
		err := each(pending, b.o.parallel, func(m *member) error {
			if n, ok := b.f.answers(ctx, m, name); !ok || n == 0 {
				mu.Lock()
				still = append(still, m)
				mu.Unlock()
			}
			return nil
		})
		pending = still
		return len(pending) == 0, err
	})
}

// untilAllStop asks each member of ms for name every 100ms, each from its
// own goroutine, until it answers with no record, and returns how long
// after begin each did.
func (b *bench) untilAllStop(ctx context.Context, ms []*member, name string, begin time.Time) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.timeout)
	defer cancel()
	gone := make([]time.Duration, len(ms))
	var left atomic.Int64
	left.Store(int64(len(ms)))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				if n, ok := b.f.answers(ctx, m, name); ok && n == 0 {
					gone[i] = time.Since(begin)
					left.Add(-1)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	wg.Wait()
	if n := left.Load(); n > 0 {
		return nil, fmt.Errorf("%d members still answer for %s after %s", n, name, b.o.timeout)
	}
	return gone, nil
}

// criticalOnLeader says whether the leader's catalog has m's gossip check
// critical.
func (b *bench) criticalOnLeader(ctx context.Context, m *member) (bool, error) {
	leader := b.leader(ctx)
	if leader == nil {
		return false, nil
	}
	var checks []struct{ CheckID, Status string }
	if err := b.c.Call(ctx, leader, http.MethodGet, "/v1/health/node/"+m.name, "", &checks); err != nil {
		return false, err
	}
	for _, c := range checks {
		if c.CheckID == "serfHealth" && c.Status == "critical" {
			return true, nil
		}
	}
	return false, nil
}
