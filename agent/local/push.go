package local

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// reapInterval is how often the pusher looks for services to deregister
// (DeregisterCriticalServiceAfter) and for output changes whose rate
// limit has passed.
const reapInterval = time.Second

// pushLoop sends check changes to the catalog as they happen until ctx
// ends. Changes coalesce: every check whose state differs from what was
// last pushed goes in one registration per service, however many runs
// reported in between. A status change is pushed at once; an output
// change alone waits for CheckUpdateInterval since the check's last push,
// so chatty checks do not turn into a stream of Raft writes. A failed
// push is left to the retrying full sync.
func (s *State) pushLoop(ctx context.Context) {
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.push:
		case <-t.C:
			s.reapCritical(ctx)
		}
		for _, group := range s.dirtyChecks(time.Now()) {
			if ctx.Err() != nil {
				return
			}
			unlock := s.lockChange(group.key)
			err := s.pushChecks(ctx, group.ids...)
			unlock()
			if err != nil {
				s.logger.Warn("pushing check changes failed; anti-entropy will retry", "checks", group.ids, "err", err)
			}
		}
	}
}

// checkGroup is the dirty checks of one service (or of the node), pushed
// together under the service's change lock.
type checkGroup struct {
	key string
	ids []string
}

// dirtyChecks returns the checks to push now, grouped by service.
func (s *State) dirtyChecks(now time.Time) []checkGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKey := map[string][]string{}
	for id, e := range s.checks {
		switch {
		case e.pushedAt.IsZero(): // never pushed: the full sync's or the registration's
			continue
		case !sameCheckBut(&e.pushed, &e.check, true):
		case e.pushed.Output != e.check.Output &&
			(s.cfg.CheckUpdateInterval == 0 || now.Sub(e.pushedAt) >= s.cfg.CheckUpdateInterval):
		default:
			continue
		}
		key := s.nodeLock
		if e.check.ServiceID != "" {
			key = e.check.ServiceID
		}
		byKey[key] = append(byKey[key], id)
	}
	out := make([]checkGroup, 0, len(byKey))
	for key, ids := range byKey {
		slices.Sort(ids)
		out = append(out, checkGroup{key: key, ids: ids})
	}
	slices.SortFunc(out, func(a, b checkGroup) int { return cmp.Compare(a.key, b.key) })
	return out
}

// reapCritical deregisters every service one of whose checks has been
// critical for longer than its DeregisterCriticalServiceAfter.
func (s *State) reapCritical(ctx context.Context) {
	now := time.Now()
	var doomed []string
	s.mu.Lock()
	for _, e := range s.checks {
		if e.def == nil || e.def.DeregisterCriticalServiceAfter <= 0 || e.criticalSince.IsZero() || e.check.ServiceID == "" {
			continue
		}
		if now.Sub(e.criticalSince) > e.def.DeregisterCriticalServiceAfter && !slices.Contains(doomed, e.check.ServiceID) {
			doomed = append(doomed, e.check.ServiceID)
		}
	}
	s.mu.Unlock()
	for _, id := range doomed {
		s.logger.Info("deregistering a service critical for too long", "service", id)
		if err := s.RemoveService(ctx, id); err != nil {
			s.logger.Warn("deregistering a critical service", "service", id, "err", err)
		}
	}
}
