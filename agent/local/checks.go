package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// Maintenance mode is a check of its own, as in Consul: critical, of Type
// maintenance, it keeps the service (or every service of the node) out of
// DNS answers without deregistering anything, and removing it brings them
// back.
const (
	nodeMaintenanceID        = catalog.NodeMaintenanceCheckID
	serviceMaintenancePrefix = catalog.ServiceMaintenancePrefix
	defaultMaintenanceReason = "Maintenance mode is enabled; no reason was given"
)

// loadChecks reads the persisted checks and starts them: a check whose
// service is gone is dropped (its service's removal was interrupted).
func (s *State) loadChecks() error {
	loaded, err := loadChecks(s.checkDir)
	if err != nil {
		return fmt.Errorf("load local checks: %w", err)
	}
	for _, pc := range loaded {
		c := pc.Check
		if c.ServiceID != "" && s.svcs[c.ServiceID] == nil {
			s.logger.Warn("dropping a persisted check of an unknown service", "check", c.CheckID, "service", c.ServiceID)
			_ = s.checkDir.remove(c.CheckID)
			continue
		}
		if err := catalog.ValidateCheckOwner("CheckID", &c); err != nil {
			// Stored before registrations were vetted for it: the
			// servers refuse it, and it would stall every sync.
			s.logger.Warn("dropping a persisted check with a reserved ID", "check", c.CheckID, "service", c.ServiceID, "err", err)
			_ = s.checkDir.remove(c.CheckID)
			continue
		}
		if c.Type == catalog.CheckTypeMaintenance {
			c.Status = catalog.HealthCritical // persisted by an older release as "maintenance"
		}
		e := &checkEntry{def: pc.Definition, check: c}
		e.check.Node = s.cfg.NodeName
		s.checks[c.CheckID] = e
		if pc.Definition == nil {
			continue
		}
		def := *pc.Definition
		if def.Type() == checks.TypeTTL && c.Status.Valid() {
			def.Status = c.Status // a TTL check resumes where it was
		}
		if err := s.runner.Add(def); err != nil {
			return fmt.Errorf("start persisted check %q: %w", c.CheckID, err)
		}
	}
	return nil
}

// checkState is the state def starts in: a re-registration of a check
// of the same type keeps its state. serviceName is the name of its
// service ("" for a node check, or to look it up among the agent's).
func (s *State) checkState(def *checks.Definition, serviceName string) catalog.Check {
	c := catalog.Check{
		Node: s.cfg.NodeName, CheckID: def.ID, Name: def.Name, Notes: def.Notes,
		Status: def.Status, ServiceID: def.ServiceID, ServiceName: serviceName, Type: def.Type(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.checks[def.ID]; old != nil && old.def != nil && old.def.Type() == def.Type() {
		c.Status, c.Output = old.check.Status, old.check.Output
	}
	if svc := s.svcs[def.ServiceID]; svc != nil && serviceName == "" {
		c.ServiceName = svc.Service
	}
	return c
}

// storeCheck persists def in state c (checkState's) and starts it,
// replacing a check with its ID. The caller holds the change lock of its
// service.
func (s *State) storeCheck(def *checks.Definition, c catalog.Check) error {
	if err := saveCheck(s.checkDir, def, &c); err != nil {
		return err
	}
	s.mu.Lock()
	e := &checkEntry{def: def, check: c}
	if c.Status == catalog.HealthCritical {
		e.criticalSince = time.Now()
	}
	s.checks[def.ID] = e
	s.mu.Unlock()
	start := *def
	start.Status = c.Status
	return s.runner.Add(start)
}

// forgetCheck stops and forgets a check here, leaving the catalog to the
// sync. The caller holds the change lock of its service.
func (s *State) forgetCheck(id string) error {
	s.runner.Remove(id)
	if err := s.checkDir.remove(id); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.checks, id)
	s.mu.Unlock()
	return nil
}

// dropCheck deregisters a check from the catalog, then stops and forgets
// it; the servers' refusal leaves it as it was. The caller holds the
// change lock of its service.
func (s *State) dropCheck(ctx context.Context, id string) error {
	err := s.catalog.Deregister(ctx, &catalog.DeregisterRequest{
		Datacenter: s.cfg.Datacenter, Node: s.cfg.NodeName, CheckID: id,
	})
	if refused(err) {
		return fmt.Errorf("deregister check %q: %w", id, err)
	}
	if ferr := s.forgetCheck(id); ferr != nil {
		return ferr
	}
	if err != nil {
		s.retrySoon()
		return fmt.Errorf("deregister check %q: %w: %w", id, ErrNotSynced, err)
	}
	return nil
}

// AddCheck validates def, pushes it, and then stores and persists it and
// starts it: the servers' refusal leaves nothing stored; when they cannot
// be reached, it is stored and the error wraps ErrNotSynced. A check of a
// service this agent does not hold, or with a check ID reserved for
// another owner (the gossip and maintenance checks), is refused with a
// *catalog.FieldError.
func (s *State) AddCheck(ctx context.Context, def *checks.Definition) error {
	d := *def
	if err := d.Validate("", s.cfg.Checks.EnableScriptChecks); err != nil {
		return err
	}
	if err := reservedCheckID("CheckID", d.ID); err != nil {
		return err
	}
	key := s.nodeLock
	if d.ServiceID != "" {
		key = d.ServiceID
	}
	unlock := s.lockChange(key)
	defer unlock()
	s.mu.Lock()
	_, known := s.svcs[d.ServiceID]
	s.mu.Unlock()
	if d.ServiceID != "" && !known {
		return &catalog.FieldError{Field: "ServiceID", Reason: fmt.Sprintf("no service %q is registered with this agent", d.ServiceID)}
	}
	c := s.checkState(&d, "")
	err := s.pushStates(ctx, c.ServiceID, []*catalog.Check{&c})
	if refused(err) {
		return fmt.Errorf("register check %q: %w", d.ID, err)
	}
	if serr := s.storeCheck(&d, c); serr != nil {
		return serr
	}
	if err != nil {
		s.retrySoon()
		return fmt.Errorf("register check %q: %w: %w", d.ID, ErrNotSynced, err)
	}
	s.markPushed([]*catalog.Check{&c})
	s.logger.Info("check registered", "check", d.ID, "service", d.ServiceID)
	return nil
}

// reservedCheckID refuses a check ID that only the leader (the gossip
// check) or the maintenance endpoints may write.
func reservedCheckID(field, id string) error {
	if _, reserved := catalog.ReservedCheckOwner(id); reserved {
		return &catalog.FieldError{Field: field, Reason: fmt.Sprintf("%q is reserved: the servers keep the gossip check and the maintenance endpoints the maintenance checks", id)}
	}
	return nil
}

// RemoveCheck stops and forgets a check and deregisters it. An unknown ID
// (or a maintenance check, which SetServiceMaintenance owns) returns
// ErrUnknownCheck.
func (s *State) RemoveCheck(ctx context.Context, id string) error {
	s.mu.Lock()
	e := s.checks[id]
	s.mu.Unlock()
	if e == nil || e.def == nil {
		return fmt.Errorf("check %q: %w", id, ErrUnknownCheck)
	}
	key := s.nodeLock
	if e.check.ServiceID != "" {
		key = e.check.ServiceID
	}
	unlock := s.lockChange(key)
	defer unlock()
	if err := s.dropCheck(ctx, id); err != nil {
		return err
	}
	s.logger.Info("check deregistered", "check", id, "service", e.check.ServiceID)
	return nil
}

// UpdateTTL sets the status of a TTL check, as its application reports it.
func (s *State) UpdateTTL(id string, status catalog.HealthStatus, output string) error {
	err := s.runner.UpdateTTL(id, status, output)
	switch {
	case errors.Is(err, checks.ErrUnknownCheck):
		return fmt.Errorf("check %q: %w", id, ErrUnknownCheck)
	case errors.Is(err, checks.ErrNotTTL):
		return fmt.Errorf("check %q: %w", id, ErrNotTTL)
	}
	return err
}

// Checks returns the agent's checks with their current state, sorted by
// ID.
func (s *State) Checks() []*catalog.Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*catalog.Check, 0, len(s.checks))
	for _, e := range s.checks {
		c := e.check
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *catalog.Check) int { return cmp.Compare(a.CheckID, b.CheckID) })
	return out
}

// UpdateCheck records a check's new state, as its runner reports it
// (checks.Notifier), and wakes the pusher. A TTL check's state is
// persisted, so that it resumes from it after a restart.
func (s *State) UpdateCheck(id string, status catalog.HealthStatus, output string) {
	s.mu.Lock()
	e := s.checks[id]
	if e == nil {
		s.mu.Unlock()
		return // removed while its last run was reporting
	}
	changed := e.check.Status != status
	e.check.Status, e.check.Output = status, output
	switch {
	case status != catalog.HealthCritical:
		e.criticalSince = time.Time{}
	case e.criticalSince.IsZero():
		e.criticalSince = time.Now()
	}
	persist := changed && e.def != nil && e.def.Type() == checks.TypeTTL
	def, c := e.def, e.check
	s.mu.Unlock()
	if persist {
		if err := saveCheck(s.checkDir, def, &c); err != nil {
			s.logger.Warn("persisting a TTL check's status", "check", id, "err", err)
		}
	}
	select {
	case s.push <- struct{}{}:
	default:
	}
}

// serviceCheckStates returns the current state of every check of service
// id (the node's own checks with id ""), sorted by ID.
func (s *State) serviceCheckStates(id string) []*catalog.Check {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*catalog.Check
	for _, e := range s.checks {
		if e.check.ServiceID == id {
			c := e.check
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *catalog.Check) int { return cmp.Compare(a.CheckID, b.CheckID) })
	return out
}

// markPushed records that the catalog now holds these check states.
func (s *State) markPushed(pushed []*catalog.Check) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range pushed {
		if e := s.checks[c.CheckID]; e != nil {
			e.pushed, e.pushedAt = *c, now
		}
	}
}

// pushChecks pushes the current state of the given checks in one
// registration. The caller holds their change lock.
func (s *State) pushChecks(ctx context.Context, ids ...string) error {
	var batch []*catalog.Check
	serviceID := ""
	s.mu.Lock()
	for _, id := range ids {
		if e := s.checks[id]; e != nil {
			c := e.check
			batch = append(batch, &c)
			if serviceID == "" {
				serviceID = c.ServiceID
			}
		}
	}
	s.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := s.pushStates(ctx, serviceID, batch); err != nil {
		s.retrySoon()
		return fmt.Errorf("push checks %v: %w: %w", ids, ErrNotSynced, err)
	}
	s.markPushed(batch)
	return nil
}

// pushStates registers the check states batch, of service serviceID (""
// for the node's), with the service's token.
func (s *State) pushStates(ctx context.Context, serviceID string, batch []*catalog.Check) error {
	req := s.registerRequest(nil)
	req.Checks = batch
	return s.catalog.Register(s.withServiceToken(ctx, serviceID), req)
}

// SetServiceMaintenance puts a service in maintenance mode (out of DNS
// answers, still registered) or takes it out. An unknown service returns
// ErrUnknownService.
func (s *State) SetServiceMaintenance(ctx context.Context, serviceID string, enable bool, reason string) error {
	unlock := s.lockChange(serviceID)
	defer unlock()
	s.mu.Lock()
	svc := s.svcs[serviceID]
	s.mu.Unlock()
	if svc == nil {
		return fmt.Errorf("service %q: %w", serviceID, ErrUnknownService)
	}
	c := catalog.Check{
		CheckID: serviceMaintenancePrefix + serviceID, Name: "Service Maintenance Mode",
		ServiceID: serviceID, ServiceName: svc.Service,
	}
	return s.setMaintenance(ctx, c, enable, reason)
}

// SetNodeMaintenance puts the whole node in maintenance mode, or takes it
// out.
func (s *State) SetNodeMaintenance(ctx context.Context, enable bool, reason string) error {
	unlock := s.lockChange(s.nodeLock)
	defer unlock()
	return s.setMaintenance(ctx, catalog.Check{CheckID: nodeMaintenanceID, Name: "Node Maintenance Mode"}, enable, reason)
}

// setMaintenance adds (enable) or removes the maintenance check c.
func (s *State) setMaintenance(ctx context.Context, c catalog.Check, enable bool, reason string) error {
	// The node needs no field: the agent's logger names it.
	what, fields := "node", []any{}
	if c.ServiceID != "" {
		what, fields = "service", []any{"service", c.ServiceID}
	}
	if !enable {
		s.mu.Lock()
		_, on := s.checks[c.CheckID]
		s.mu.Unlock()
		if !on {
			return nil
		}
		if err := s.dropCheck(ctx, c.CheckID); err != nil {
			return err
		}
		s.logger.Info(what+" left maintenance mode", fields...)
		return nil
	}
	if reason == "" {
		reason = defaultMaintenanceReason
	}
	c.Node, c.Status, c.Notes, c.Type = s.cfg.NodeName, catalog.HealthCritical, reason, catalog.CheckTypeMaintenance
	err := s.pushStates(ctx, c.ServiceID, []*catalog.Check{&c})
	if refused(err) {
		return fmt.Errorf("set maintenance: %w", err)
	}
	if serr := saveCheck(s.checkDir, nil, &c); serr != nil {
		return serr
	}
	s.mu.Lock()
	s.checks[c.CheckID] = &checkEntry{check: c}
	s.mu.Unlock()
	if err != nil {
		s.retrySoon()
		return fmt.Errorf("set maintenance: %w: %w", ErrNotSynced, err)
	}
	s.markPushed([]*catalog.Check{&c})
	s.logger.Info(what+" entered maintenance mode", append(fields, "reason", reason)...)
	return nil
}

// HasService reports whether the agent holds service id.
func (s *State) HasService(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.svcs[id]
	return ok
}
