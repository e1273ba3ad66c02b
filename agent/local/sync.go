package local

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// SyncFull makes the catalog's view of this node equal to the local state:
// it registers the node if it is missing or different, registers every
// local service the catalog lacks or holds differently, and deregisters
// every service the catalog holds for this node that the agent does not.
func (s *State) SyncFull(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()

	node, remote, err := s.catalog.NodeServices(ctx, s.cfg.NodeName)
	if err != nil {
		return fmt.Errorf("read catalog for node %q: %w", s.cfg.NodeName, err)
	}
	if node == nil || !s.nodeMatches(node) {
		req := s.registerRequest(nil)
		if err := s.catalog.Register(ctx, req); err != nil {
			return fmt.Errorf("register node %q: %w", s.cfg.NodeName, err)
		}
	}
	local := s.Services()
	byID := make(map[string]*catalog.Service, len(remote))
	for _, svc := range remote {
		byID[svc.ID] = svc
	}
	for _, svc := range local {
		if have, ok := byID[svc.ID]; ok && have.SameAs(svc) {
			delete(byID, svc.ID)
			continue
		}
		delete(byID, svc.ID)
		if err := s.catalog.Register(ctx, s.registerRequest(svc)); err != nil {
			return fmt.Errorf("sync service %q: %w", svc.ID, err)
		}
	}
	for id := range byID {
		err := s.catalog.Deregister(ctx, &catalog.DeregisterRequest{
			Datacenter: s.cfg.Datacenter, Node: s.cfg.NodeName, ServiceID: id,
		})
		if err != nil {
			return fmt.Errorf("remove stale service %q: %w", id, err)
		}
	}
	return nil
}

func (s *State) nodeMatches(n *catalog.Node) bool {
	return n.Address == s.cfg.Address && n.ID == s.cfg.NodeID &&
		n.Datacenter == s.cfg.Datacenter && maps.Equal(n.Meta, s.cfg.NodeMeta)
}

// Run keeps the catalog in step with the local state until ctx ends: a full
// sync every SyncInterval (with jitter), and sooner — after RetryInterval —
// when a push or a sync failed.
func (s *State) Run(ctx context.Context) {
	wait := s.jittered(s.cfg.SyncInterval)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.retry:
			t.Stop()
			s.sleep(ctx, s.cfg.RetryInterval)
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		wait = s.jittered(s.cfg.SyncInterval)
		if err := s.SyncFull(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.logger.Warn("anti-entropy sync failed; retrying", "node", s.cfg.NodeName, "err", err)
			wait = s.cfg.RetryInterval
		}
	}
}

func (s *State) jittered(d time.Duration) time.Duration {
	return d + rand.N(d/4+1)
}

func (s *State) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
