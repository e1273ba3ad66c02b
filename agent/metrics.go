package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/diskfree"
	"github.com/cairndns/cairn/resolver"
)

// This file turns the agent's own figures into Prometheus series and
// serves the agent's registry (package telemetry: the libraries' series,
// the runtime's and the process's, and these) on GET /v1/agent/metrics.
// The parts keep their own counters (the DNS server's atomics, the cache's
// stats); agentCollector reads them at each scrape, so nothing here costs
// a DNS question anything.

// agentCollector reports the agent's own series. It is an unchecked
// collector (Describe sends nothing): which series exist depends on which
// parts the agent runs.
type agentCollector struct{ a *Agent }

var _ prometheus.Collector = agentCollector{}

// The descriptions of the agent's own series. Immutable once made.
var (
	descDNSQuestions = prometheus.NewDesc("cairn_dns_questions_total", "DNS questions answered, by query type and rcode.", []string{"qtype", "rcode"}, nil)
	descDNSLatency   = prometheus.NewDesc("cairn_dns_answer_seconds", "Time from a DNS query's arrival to its reply having been written.", nil, nil)
	descDNSRRL       = prometheus.NewDesc("cairn_dns_rate_limited_total", "UDP replies over the response rate limit, by what became of them (dropped, or slipped: sent truncated).", []string{"action"}, nil)
	descDNSTCP       = prometheus.NewDesc("cairn_dns_tcp_refused_total", "TCP DNS connections closed at once because dns_max_tcp_conns were open, or dns_max_tcp_conns_per_client from the same client.", nil, nil)

	descCacheHits     = prometheus.NewDesc("cairn_cache_hits_total", "DNS cache lookups answered from memory.", nil, nil)
	descCacheMisses   = prometheus.NewDesc("cairn_cache_misses_total", "DNS cache lookups that waited for a fetch from the servers.", nil, nil)
	descCacheStale    = prometheus.NewDesc("cairn_cache_stale_answers_total", "DNS cache hits answered from an entry the servers could not refresh (serve-stale).", nil, nil)
	descCacheEvict    = prometheus.NewDesc("cairn_cache_evictions_total", "DNS cache entries dropped by the size bounds, idleness or the maximum staleness.", nil, nil)
	descCacheRefresh  = prometheus.NewDesc("cairn_cache_refresh_errors_total", "Failed background refreshes of DNS cache entries.", nil, nil)
	descCacheEntries  = prometheus.NewDesc("cairn_cache_entries", "DNS cache entries held now.", nil, nil)
	descAgentServices = prometheus.NewDesc("cairn_agent_services", "Services registered on this agent.", nil, nil)
	descSyncs         = prometheus.NewDesc("cairn_agent_syncs_total", "Full anti-entropy syncs of this agent's services and checks with the catalog, by result (ok, failed).", []string{"result"}, nil)
	descCheckRuns     = prometheus.NewDesc("cairn_agent_check_runs_total", "Probes run by this agent's health checks, by check type and result status.", []string{"type", "status"}, nil)
	descAgentChecks   = prometheus.NewDesc("cairn_agent_checks", "Health checks registered on this agent, by status.", []string{"status"}, nil)

	descIsLeader     = prometheus.NewDesc("cairn_server_is_leader", "1 on the server that is the Raft leader of its datacenter, 0 on the others.", nil, nil)
	descLeaderKnown  = prometheus.NewDesc("cairn_server_leader_known", "1 while this server knows a Raft leader of its datacenter, 0 without one.", nil, nil)
	descAppliedIndex = prometheus.NewDesc("cairn_server_applied_index", "The last Raft index this server's catalog applied.", nil, nil)
	descLastContact  = prometheus.NewDesc("cairn_server_last_contact_seconds", "Time since this server last heard from the leader (0 on the leader).", nil, nil)
	descInflated     = prometheus.NewDesc("cairn_snapshot_restore_inflated_bytes_total", "Bytes this server inflated from snapshot archives it restored (it inflates only as the leader, after the restore was authorized).", nil, nil)
	descStorageOK    = prometheus.NewDesc("cairn_raft_storage_healthy", "1 while this server can write its Raft log, stable store and snapshots; 0 once a write failed (a full or failing disk), until one succeeds again.", nil, nil)
	descStorageFails = prometheus.NewDesc("cairn_raft_storage_write_failures_total", "Failed writes of this server's Raft log, stable store and snapshots.", nil, nil)
	descCatalog      = prometheus.NewDesc("cairn_catalog_entries", "What a server's catalog holds, by kind: nodes, service_instances, checks, kv_entries, sessions, prepared_queries.", []string{"kind"}, nil)

	descDataDirFree = prometheus.NewDesc("cairn_data_dir_free_bytes", "Free space in the agent's data dir, in bytes (what an unprivileged process may still write); see limits.data_dir_min_free_bytes.", nil, nil)

	descGossipMembers   = prometheus.NewDesc("cairn_gossip_members", "Members of a gossip pool as this agent sees them, by pool and status (alive, failed, left).", []string{"pool", "status"}, nil)
	descGossipDropped   = prometheus.NewDesc("cairn_gossip_log_lines_dropped_total", "Log lines about bad gossip packets left out by the per-source rate limit, by pool.", []string{"pool"}, nil)
	descGossipConflicts = prometheus.NewDesc("cairn_gossip_name_conflicts_total", "Times two agents claimed one member name, by pool.", []string{"pool"}, nil)
)

// statusOrder is the order the agent's checks are reported in by status;
// each of these is reported, zero or not.
var statusOrder = []catalog.HealthStatus{catalog.HealthPassing, catalog.HealthWarning, catalog.HealthCritical, catalog.HealthMaintenance}

// Describe sends nothing: agentCollector is unchecked.
func (agentCollector) Describe(chan<- *prometheus.Desc) {}

// Collect reports the figures as they are now. A part the agent has not
// started (it is wired after DNS and local state start, so only in tests)
// is left out.
func (c agentCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.a
	if a.dns != nil {
		collectDNS(ch, a.dns.Metrics())
	}
	if a.dnsSrc != nil {
		st := a.dnsSrc.Stats()
		counter(ch, descCacheHits, st.Hits)
		counter(ch, descCacheMisses, st.Misses)
		counter(ch, descCacheStale, st.StaleAnswers)
		counter(ch, descCacheEvict, st.Evictions)
		counter(ch, descCacheRefresh, st.RefreshErrors)
		ch <- prometheus.MustNewConstMetric(descCacheEntries, prometheus.GaugeValue, float64(st.Entries))
	}
	if a.local != nil {
		ch <- prometheus.MustNewConstMetric(descAgentServices, prometheus.GaugeValue, float64(len(a.local.Services())))
		n := make(map[catalog.HealthStatus]int, len(statusOrder))
		for _, chk := range a.local.Checks() {
			n[chk.Status]++
		}
		for _, st := range statusOrder {
			ch <- prometheus.MustNewConstMetric(descAgentChecks, prometheus.GaugeValue, float64(n[st]), string(st))
		}
		ok, failed := a.local.SyncStats()
		counter(ch, descSyncs, ok, "ok")
		counter(ch, descSyncs, failed, "failed")
		for _, r := range a.local.CheckRuns() {
			counter(ch, descCheckRuns, r.Count, r.Type, string(r.Status))
		}
	}
	if a.cfg.DataDir != "" {
		if sp, err := diskfree.Of(a.cfg.DataDir); err == nil {
			ch <- prometheus.MustNewConstMetric(descDataDirFree, prometheus.GaugeValue, float64(sp.Free))
		}
	}
	a.role.collect(ch) // role.go
	for _, p := range []struct {
		name string
		pool *gossip.Pool
	}{{"lan", a.gossip}, {"wan", a.wan}} {
		if p.pool == nil {
			continue
		}
		n := map[gossip.Status]int{}
		for _, m := range p.pool.Members() {
			n[m.Status]++
		}
		for _, st := range []gossip.Status{gossip.StatusAlive, gossip.StatusFailed, gossip.StatusLeft} {
			ch <- prometheus.MustNewConstMetric(descGossipMembers, prometheus.GaugeValue, float64(n[st]), p.name, st.String())
		}
		counter(ch, descGossipDropped, p.pool.DroppedLogLines(), p.name)
		counter(ch, descGossipConflicts, p.pool.NameConflicts(), p.name)
	}
}

// collectDNS reports the DNS server's figures: every (qtype, rcode) pair
// answered so far, and the latency histogram in seconds.
func collectDNS(ch chan<- prometheus.Metric, dm resolver.DNSMetrics) {
	for _, q := range dm.Questions {
		counter(ch, descDNSQuestions, q.Count, q.Qtype, q.Rcode)
	}
	buckets := make(map[float64]uint64, len(dm.Latency.Buckets))
	for _, b := range dm.Latency.Buckets {
		buckets[b.UpperBound.Seconds()] = b.Count
	}
	ch <- prometheus.MustNewConstHistogram(descDNSLatency, dm.Latency.Count, dm.Latency.Sum.Seconds(), buckets)
	counter(ch, descDNSRRL, dm.RateLimited.Dropped, "dropped")
	counter(ch, descDNSRRL, dm.RateLimited.Slipped, "slipped")
	counter(ch, descDNSTCP, dm.TCPRefused)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}
