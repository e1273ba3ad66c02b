package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// CheckRegister adds a check to the local agent, on its node or on one of
// its services (reg.ServiceID), or replaces the check with the same ID:
// PUT /v1/agent/check/register. A rejected field comes back as a
// *StatusError with Field and Reason set.
func (a *Agent) CheckRegister(ctx context.Context, reg *AgentCheckRegistration) error {
	if reg == nil {
		return errors.New("register check: registration is nil")
	}
	_, err := a.c.do(ctx, request{method: http.MethodPut, path: "/v1/agent/check/register", body: reg}, nil)
	return err
}

// CheckDeregister removes the check with the given ID from the local
// agent: PUT /v1/agent/check/deregister/<id>.
func (a *Agent) CheckDeregister(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("deregister check: check ID is empty")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/check/deregister/" + url.PathEscape(id),
	}, nil)
	return err
}

// PassTTL reports a TTL check passing, with note as its output:
// PUT /v1/agent/check/pass/<id>?note=<note>.
func (a *Agent) PassTTL(ctx context.Context, id, note string) error {
	return a.ttl(ctx, "pass", id, note)
}

// WarnTTL reports a TTL check warning: PUT /v1/agent/check/warn/<id>.
func (a *Agent) WarnTTL(ctx context.Context, id, note string) error {
	return a.ttl(ctx, "warn", id, note)
}

// FailTTL reports a TTL check critical: PUT /v1/agent/check/fail/<id>.
func (a *Agent) FailTTL(ctx context.Context, id, note string) error {
	return a.ttl(ctx, "fail", id, note)
}

func (a *Agent) ttl(ctx context.Context, verb, id, note string) error {
	if id == "" {
		return fmt.Errorf("%s check: check ID is empty", verb)
	}
	var q url.Values
	if note != "" {
		q = url.Values{"note": {note}}
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/check/" + verb + "/" + url.PathEscape(id),
		query:  q,
	}, nil)
	return err
}

// ttlStatuses maps what UpdateTTL accepts to the status sent.
var ttlStatuses = map[string]string{
	"pass": HealthPassing, HealthPassing: HealthPassing,
	"warn": HealthWarning, HealthWarning: HealthWarning,
	"fail": HealthCritical, HealthCritical: HealthCritical,
}

// UpdateTTL reports the status of a TTL check with output:
// PUT /v1/agent/check/update/<id>. status is HealthPassing, HealthWarning
// or HealthCritical, or "pass", "warn" or "fail" as in Consul's client.
// An agent that does not know the check answers 404; one whose check is
// not a TTL check answers 400; both come back as a *StatusError.
func (a *Agent) UpdateTTL(ctx context.Context, id, output, status string) error {
	if id == "" {
		return errors.New("update check: check ID is empty")
	}
	st, ok := ttlStatuses[status]
	if !ok {
		return fmt.Errorf("update check %q: status %q: want passing, warning or critical", id, status)
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/check/update/" + url.PathEscape(id),
		body:   struct{ Status, Output string }{st, output},
	}, nil)
	return err
}

// Checks lists the local agent's checks with their current status, keyed
// by check ID: GET /v1/agent/checks.
func (a *Agent) Checks(ctx context.Context) (map[string]*AgentCheck, error) {
	var out map[string]*AgentCheck
	if _, err := a.c.do(ctx, request{method: http.MethodGet, path: "/v1/agent/checks"}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = map[string]*AgentCheck{}
	}
	return out, nil
}

// EnableServiceMaintenance puts the service with the given ID in
// maintenance: it leaves DNS answers and the passing health results
// without being deregistered. reason is shown with the maintenance check.
// PUT /v1/agent/service/maintenance/<id>?enable=true&reason=<reason>.
func (a *Agent) EnableServiceMaintenance(ctx context.Context, id, reason string) error {
	return a.serviceMaintenance(ctx, id, true, reason)
}

// DisableServiceMaintenance takes the service out of maintenance:
// PUT /v1/agent/service/maintenance/<id>?enable=false.
func (a *Agent) DisableServiceMaintenance(ctx context.Context, id string) error {
	return a.serviceMaintenance(ctx, id, false, "")
}

func (a *Agent) serviceMaintenance(ctx context.Context, id string, enable bool, reason string) error {
	if id == "" {
		return errors.New("service maintenance: service ID is empty")
	}
	_, err := a.c.do(ctx, request{
		method: http.MethodPut,
		path:   "/v1/agent/service/maintenance/" + url.PathEscape(id),
		query:  maintenanceQuery(enable, reason),
	}, nil)
	return err
}

// EnableNodeMaintenance puts the agent's whole node in maintenance: every
// service on it leaves DNS answers. PUT /v1/agent/maintenance?enable=true.
func (a *Agent) EnableNodeMaintenance(ctx context.Context, reason string) error {
	_, err := a.c.do(ctx, request{
		method: http.MethodPut, path: "/v1/agent/maintenance", query: maintenanceQuery(true, reason),
	}, nil)
	return err
}

// DisableNodeMaintenance takes the node out of maintenance:
// PUT /v1/agent/maintenance?enable=false.
func (a *Agent) DisableNodeMaintenance(ctx context.Context) error {
	_, err := a.c.do(ctx, request{
		method: http.MethodPut, path: "/v1/agent/maintenance", query: maintenanceQuery(false, ""),
	}, nil)
	return err
}

func maintenanceQuery(enable bool, reason string) url.Values {
	q := url.Values{"enable": {strconv.FormatBool(enable)}}
	if reason != "" {
		q.Set("reason", reason)
	}
	return q
}
