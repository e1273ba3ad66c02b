package local

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairndns/cairn/catalog"
)

// This agent's services, checks and syncs as series, read at each scrape.
var (
	descServices  = prometheus.NewDesc("cairn_agent_services", "Services registered on this agent.", nil, nil)
	descSyncs     = prometheus.NewDesc("cairn_agent_syncs_total", "Full anti-entropy syncs of this agent's services and checks with the catalog, by result (ok, failed).", []string{"result"}, nil)
	descCheckRuns = prometheus.NewDesc("cairn_agent_check_runs_total", "Probes run by this agent's health checks, by check type and result status.", []string{"type", "status"}, nil)
	descChecks    = prometheus.NewDesc("cairn_agent_checks", "Health checks registered on this agent, by status.", []string{"status"}, nil)
)

// statusOrder is the order checks are reported in by status; each is
// reported, zero or not.
var statusOrder = []catalog.HealthStatus{catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical, catalog.HealthMaintenance}

// Collectors returns the local state's series, for the agent's registry.
func (s *State) Collectors() []prometheus.Collector { return []prometheus.Collector{stateCollector{s}} }

// stateCollector is unchecked (Describe sends nothing): the (type,
// status) pairs of check runs depend on what ran.
type stateCollector struct{ s *State }

func (stateCollector) Describe(chan<- *prometheus.Desc) {}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	ch <- prometheus.MustNewConstMetric(descServices, prometheus.GaugeValue, float64(len(s.Services())))
	n := make(map[catalog.HealthStatus]int, len(statusOrder))
	for _, chk := range s.Checks() {
		n[chk.Status]++
	}
	for _, st := range statusOrder {
		ch <- prometheus.MustNewConstMetric(descChecks, prometheus.GaugeValue, float64(n[st]), string(st))
	}
	ok, failed := s.SyncStats()
	ch <- prometheus.MustNewConstMetric(descSyncs, prometheus.CounterValue, float64(ok), "ok")
	ch <- prometheus.MustNewConstMetric(descSyncs, prometheus.CounterValue, float64(failed), "failed")
	for _, r := range s.CheckRuns() {
		ch <- prometheus.MustNewConstMetric(descCheckRuns, prometheus.CounterValue, float64(r.Count), r.Type, string(r.Status))
	}
}
