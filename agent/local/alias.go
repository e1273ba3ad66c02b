package local

import (
	"context"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// The local state answers alias checks (checks.AliasSource): the health
// of a service instance or node, from this agent's own checks for its
// node and from the catalog for any other.
var _ checks.AliasSource = (*State)(nil)

// AliasHealth returns the worst status among the node's own checks and,
// with serviceID, the service's checks: the status DNS answers by.
func (s *State) AliasHealth(ctx context.Context, node, serviceID string) (catalog.HealthStatus, bool, error) {
	if node == "" || node == s.cfg.NodeName {
		// The local state is the authority for this node, and is current
		// before any push reaches the servers.
		if serviceID != "" && !s.HasService(serviceID) {
			return "", false, nil
		}
		return worst(s.Checks(), serviceID), true, nil
	}
	cat := s.catalog
	n, svcs, err := cat.NodeServices(ctx, node)
	if err != nil {
		return "", false, err
	}
	if n == nil {
		return "", false, nil
	}
	if serviceID != "" {
		found := false
		for _, svc := range svcs {
			found = found || svc.ID == serviceID
		}
		if !found {
			return "", false, nil
		}
	}
	_, cs, err := cat.NodeChecks(ctx, node)
	if err != nil {
		return "", false, err
	}
	return worst(cs, serviceID), true, nil
}

// worst folds the node-level checks and those of serviceID into one
// status. Alias checks are left out: a node-level alias would otherwise
// count itself and never recover from its first critical.
func worst(cs []*catalog.Check, serviceID string) catalog.HealthStatus {
	st := catalog.HealthPassing
	for _, c := range cs {
		if c.Type == checks.TypeAlias {
			continue
		}
		if c.ServiceID == "" || c.ServiceID == serviceID {
			st = st.Worse(c.Status)
		}
	}
	return st
}
