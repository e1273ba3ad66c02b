package httpapi

import (
	"net/http"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/hostinfo"
)

// This file holds what the agent tells about itself for load balancers
// and `consul debug`: the health of its own services (GET
// /v1/agent/health/service/id/<id> and .../name/<name>) and the machine
// it runs on (GET /v1/agent/host).

// serviceChecksInfo is one service's health as the agent sees it
// (Consul's AgentServiceChecksInfo).
type serviceChecksInfo struct {
	AggregatedStatus string
	Service          *agentService
	Checks           []*healthCheck
}

// aggregatedStatus is the worst status of checks, as Consul's
// HealthChecks.AggregatedStatus: maintenance first, then critical,
// warning, passing (passing with no check at all).
func aggregatedStatus(checks []*healthCheck) string {
	var maint, critical, warning bool
	for _, c := range checks {
		if c.CheckID == catalog.NodeMaintenanceCheckID || strings.HasPrefix(c.CheckID, catalog.ServiceMaintenancePrefix) ||
			c.Status == string(catalog.HealthMaintenance) {
			maint = true
			continue
		}
		switch catalog.HealthStatus(c.Status) {
		case catalog.HealthCritical:
			critical = true
		case catalog.HealthWarning:
			warning = true
		}
	}
	switch {
	case maint:
		return string(catalog.HealthMaintenance)
	case critical:
		return string(catalog.HealthCritical)
	case warning:
		return string(catalog.HealthWarning)
	}
	return string(catalog.HealthPassing)
}

// healthStatusCode is Consul's HTTP status for an aggregated status: a
// load balancer reads 200 as "send traffic", 429 as "warning", 503 as
// "keep away".
func healthStatusCode(status string) int {
	switch status {
	case string(catalog.HealthPassing):
		return http.StatusOK
	case string(catalog.HealthWarning):
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// serviceHealth is the health of the agent's service svc: its checks and
// the node's, as Consul counts them.
func (s *Server) serviceHealth(svc *catalog.Service, all []*catalog.Check) *serviceChecksInfo {
	info := &serviceChecksInfo{Service: s.toAgentService(svc), Checks: []*healthCheck{}}
	for _, c := range all {
		if c.ServiceID == svc.ID || c.ServiceID == "" {
			info.Checks = append(info.Checks, toHealthCheck(c))
		}
	}
	info.AggregatedStatus = aggregatedStatus(info.Checks)
	return info
}

// writeHealth answers with the status code of status, and the body as
// JSON, or with ?format=text the status alone, as Consul's.
func writeHealth(w http.ResponseWriter, r *http.Request, status string, body any) {
	code := healthStatusCode(status)
	if r.URL.Query().Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(status))
		return
	}
	writeJSON(w, code, body)
}

// agentHealthServiceByID answers GET /v1/agent/health/service/id/<id>
// (service:read on the service). An unknown ID is a 404 whose body says
// critical, as Consul's.
func (s *Server) agentHealthServiceByID(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	for _, svc := range s.local.Services() {
		if svc.ID != id {
			continue
		}
		if err := s.permission(r, "service", "read", svc.Service, func(a *acl.Authorizer) bool { return a.ServiceRead(svc.Service) }); err != nil {
			return err
		}
		info := s.serviceHealth(svc, s.local.Checks())
		writeHealth(w, r, info.AggregatedStatus, info)
		return nil
	}
	if r.URL.Query().Get("format") == "text" {
		return notFound("ServiceId %s not found", id)
	}
	writeJSON(w, http.StatusNotFound, &serviceChecksInfo{AggregatedStatus: string(catalog.HealthCritical)})
	return nil
}

// agentHealthServiceByName answers GET
// /v1/agent/health/service/name/<name> (service:read on the name): every
// instance of the service on this agent, with the status code of the
// worst. None is a 404 with an empty list.
func (s *Server) agentHealthServiceByName(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name") // service:read on it: the route's Need
	checks := s.local.Checks()
	out := []*serviceChecksInfo{}
	var statuses []*healthCheck // one pseudo-check per instance, for the worst status
	for _, svc := range s.local.Services() {
		if svc.Service != name {
			continue
		}
		info := s.serviceHealth(svc, checks)
		out = append(out, info)
		statuses = append(statuses, &healthCheck{Status: info.AggregatedStatus})
	}
	if len(out) == 0 {
		if r.URL.Query().Get("format") == "text" {
			return notFound("ServiceName %s Not Found", name)
		}
		writeJSON(w, http.StatusNotFound, out)
		return nil
	}
	writeHealth(w, r, aggregatedStatus(statuses), out)
	return nil
}

// agentHost answers GET /v1/agent/host (operator:read, as Consul's).
func (s *Server) agentHost(w http.ResponseWriter, r *http.Request) error {
	writeJSONPretty(w, r, hostinfo.Collect())
	return nil
}
