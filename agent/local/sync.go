package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/clock"
	"github.com/cairndns/cairn/rpc"
)

// SyncFull makes the catalog's view of this node equal to the local state:
// it registers the node if it is missing or different, registers every
// local service (with its checks) and node check the catalog lacks or
// holds differently, and deregisters every service and check the catalog
// holds for this node that the agent does not (but the servers' own
// checks and services, Config.ServerChecks and ServerServices). A check whose output alone differs is
// left for its next push when it was pushed less than
// CheckUpdateInterval ago.
func (s *State) SyncFull(ctx context.Context) (err error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	defer func() {
		if err != nil {
			s.syncFailures.Add(1)
		} else {
			s.syncs.Add(1)
		}
	}()
	node, remote, err := s.catalog.NodeServices(ctx, s.cfg.NodeName)
	if err != nil {
		return fmt.Errorf("read catalog for node %q: %w", s.cfg.NodeName, err)
	}
	var remoteChecks []*catalog.Check
	if node != nil {
		if _, remoteChecks, err = s.catalog.NodeChecks(ctx, s.cfg.NodeName); err != nil {
			return fmt.Errorf("read checks of node %q: %w", s.cfg.NodeName, err)
		}
	}
	if node == nil || !s.nodeMatches(node) {
		req := s.registerRequest(nil)
		req.SkipNodeUpdate = false
		if err := s.catalog.Register(ctx, req); err != nil {
			return fmt.Errorf("register node %q: %w", s.cfg.NodeName, err)
		}
	}
	svcByID := make(map[string]*catalog.Service, len(remote))
	for _, svc := range remote {
		if !slices.Contains(s.cfg.ServerServices, svc.ID) {
			svcByID[svc.ID] = svc
		}
	}
	checkByID := make(map[string]*catalog.Check, len(remoteChecks))
	for _, c := range remoteChecks {
		if !slices.Contains(s.cfg.ServerChecks, c.CheckID) {
			checkByID[c.CheckID] = c
		}
	}
	now := time.Now()
	for _, svc := range s.Services() {
		checks := s.serviceCheckStates(svc.ID)
		have, ok := svcByID[svc.ID]
		if ok && svc.EnableTagOverride && !slices.Equal(have.Tags, svc.Tags) {
			if svc, err = s.adoptCatalogTags(svc, have.Tags); err != nil {
				return err
			}
		}
		inSync := ok && have.SameAs(svc) && s.checksInSync(checks, checkByID, now)
		delete(svcByID, svc.ID)
		for _, c := range checks {
			delete(checkByID, c.CheckID)
		}
		if inSync {
			continue
		}
		req := s.registerRequest(svc)
		req.Checks = checks
		if err := s.catalog.Register(s.withServiceToken(ctx, svc.ID), req); err != nil {
			return fmt.Errorf("sync service %q: %w", svc.ID, err)
		}
		s.markPushed(checks)
	}
	nodeChecks := s.serviceCheckStates("")
	inSync := s.checksInSync(nodeChecks, checkByID, now)
	for _, c := range nodeChecks {
		delete(checkByID, c.CheckID)
	}
	if !inSync {
		req := s.registerRequest(nil)
		req.Checks = nodeChecks
		if err := s.catalog.Register(ctx, req); err != nil {
			return fmt.Errorf("sync node checks: %w", err)
		}
		s.markPushed(nodeChecks)
	}
	for id := range svcByID {
		err := s.catalog.Deregister(ctx, &catalog.DeregisterRequest{
			Datacenter: s.cfg.Datacenter, Node: s.cfg.NodeName, ServiceID: id,
		})
		if err != nil {
			return fmt.Errorf("remove stale service %q: %w", id, err)
		}
		for cid, c := range checkByID {
			if c.ServiceID == id {
				delete(checkByID, cid) // gone with their service
			}
		}
	}
	for id := range checkByID {
		err := s.catalog.Deregister(ctx, &catalog.DeregisterRequest{
			Datacenter: s.cfg.Datacenter, Node: s.cfg.NodeName, CheckID: id,
		})
		if err != nil {
			return fmt.Errorf("remove stale check %q: %w", id, err)
		}
	}
	return nil
}

// adoptCatalogTags makes tags, changed in the catalog, the local tags of a
// service registered with EnableTagOverride (Consul's): the sync then
// keeps them instead of writing the agent's back. It returns the service
// as now stored. s.syncMu is held, so no registration races it.
func (s *State) adoptCatalogTags(svc *catalog.Service, tags []string) (*catalog.Service, error) {
	upd := cloneService(svc)
	upd.Tags = slices.Clone(tags)
	s.mu.Lock()
	token, fromConfig := s.tokens[svc.ID], s.fromConfig[svc.ID]
	s.mu.Unlock()
	if err := saveService(s.services, upd, token, fromConfig); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.svcs[upd.ID] = upd
	s.servicesChangedLocked()
	s.mu.Unlock()
	s.logger.Info("service tags taken from the catalog (EnableTagOverride)", "service", svc.ID, "tags", tags)
	return cloneService(upd), nil
}

// checksInSync reports whether the catalog holds every one of local as it
// is (an output-only difference counts as in sync while it is rate
// limited).
func (s *State) checksInSync(local []*catalog.Check, remote map[string]*catalog.Check, now time.Time) bool {
	for _, c := range local {
		r, ok := remote[c.CheckID]
		if !ok || !sameCheckBut(r, c, true) {
			return false
		}
		if r.Output != c.Output && !s.outputLimited(c.CheckID, now) {
			return false
		}
	}
	return true
}

// outputLimited reports whether a push of check id's output must wait.
func (s *State) outputLimited(id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.checks[id]
	return e != nil && s.cfg.CheckUpdateInterval > 0 && now.Sub(e.pushedAt) < s.cfg.CheckUpdateInterval
}

// sameCheckBut reports whether a and b hold the same check state, output
// aside when ignoreOutput.
func sameCheckBut(a, b *catalog.Check, ignoreOutput bool) bool {
	return a.CheckID == b.CheckID && a.Name == b.Name && a.Status == b.Status && a.Notes == b.Notes &&
		a.ServiceID == b.ServiceID && a.Type == b.Type && (ignoreOutput || a.Output == b.Output)
}

func (s *State) nodeMatches(n *catalog.Node) bool {
	return n.Address == s.cfg.Address && n.ID == s.cfg.NodeID &&
		n.Datacenter == s.cfg.Datacenter && maps.Equal(n.Meta, s.cfg.NodeMeta) &&
		maps.Equal(n.TaggedAddresses, s.cfg.TaggedAddresses)
}

// firstSyncTimeout bounds one attempt of FirstSync.
const firstSyncTimeout = 30 * time.Second

// FirstSync runs SyncFull until it succeeds or ctx ends, and reports
// whether it did: no write can succeed until a leader is elected and, on
// a client, a server is found. A refusal by the servers' ACLs, which
// retrying will not cure until an operator acts, is logged once.
func (s *State) FirstSync(ctx context.Context) bool {
	wait := 100 * time.Millisecond
	warned := false
	for attempt := 1; ; attempt++ {
		sctx, cancel := context.WithTimeout(ctx, firstSyncTimeout)
		err := s.SyncFull(sctx)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if !warned && (errors.Is(err, rpc.ErrPermissionDenied) || errors.Is(err, rpc.ErrACLNotFound)) {
			warned = true
			s.logger.Warn("the servers refuse this node's registration; set acl.tokens.agent to a token with node:write on this node (and service:write on its services)", "err", err)
		}
		s.logger.Debug("first sync failed, will retry", "attempt", attempt, "err", err)
		if !clock.Sleep(ctx, wait) {
			return false
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// Run keeps the catalog in step with the local state until ctx ends: it
// pushes check changes as they happen (see pushLoop), deregisters services
// whose check has been critical past DeregisterCriticalServiceAfter, and
// runs a full sync every SyncInterval (scaled to the cluster, with
// jitter), and sooner — after RetryInterval — when a push or a sync
// failed.
func (s *State) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.pushLoop(ctx)
	}()
	defer func() { <-done }()
	wait := s.jittered(s.cfg.syncInterval())
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.retry:
			t.Stop()
			clock.Sleep(ctx, s.cfg.RetryInterval)
		case <-s.syncSoon:
			t.Stop()
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		wait = s.jittered(s.cfg.syncInterval())
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
