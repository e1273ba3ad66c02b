package cache

import "github.com/prometheus/client_golang/prometheus"

// The DNS cache's series, read from Stats at each scrape.
var (
	descHits    = prometheus.NewDesc("cairn_cache_hits_total", "DNS cache lookups answered from memory.", nil, nil)
	descMisses  = prometheus.NewDesc("cairn_cache_misses_total", "DNS cache lookups that waited for a fetch from the servers.", nil, nil)
	descStale   = prometheus.NewDesc("cairn_cache_stale_answers_total", "DNS cache hits answered from an entry the servers could not refresh (serve-stale).", nil, nil)
	descEvict   = prometheus.NewDesc("cairn_cache_evictions_total", "DNS cache entries dropped by the size bounds, idleness or the maximum staleness.", nil, nil)
	descRefresh = prometheus.NewDesc("cairn_cache_refresh_errors_total", "Failed background refreshes of DNS cache entries.", nil, nil)
	descEntries = prometheus.NewDesc("cairn_cache_entries", "DNS cache entries held now.", nil, nil)
)

// NewCollector reports stats (one cache's, or several summed) as the DNS
// cache's series.
func NewCollector(stats func() Stats) prometheus.Collector { return statsCollector(stats) }

type statsCollector func() Stats

func (statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHits, descMisses, descStale, descEvict, descRefresh, descEntries} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c()
	for _, m := range []struct {
		d *prometheus.Desc
		v uint64
	}{{descHits, st.Hits}, {descMisses, st.Misses}, {descStale, st.StaleAnswers}, {descEvict, st.Evictions}, {descRefresh, st.RefreshErrors}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v))
	}
	ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(st.Entries))
}
