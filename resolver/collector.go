package resolver

import "github.com/prometheus/client_golang/prometheus"

// The DNS server's series. The hot path counts in its own atomics
// (metrics.go); this collector reads them at each scrape, so a scrape
// costs a question nothing.
var (
	descQuestions = prometheus.NewDesc("cairn_dns_questions_total", "DNS questions answered, by query type and rcode.", []string{"qtype", "rcode"}, nil)
	descLatency   = prometheus.NewDesc("cairn_dns_answer_seconds", "Time from a DNS query's arrival to its reply having been written.", nil, nil)
	descRRL       = prometheus.NewDesc("cairn_dns_rate_limited_total", "UDP replies over the response rate limit, by what became of them (dropped, or slipped: sent truncated).", []string{"action"}, nil)
	descTCP       = prometheus.NewDesc("cairn_dns_tcp_refused_total", "TCP DNS connections closed at once because dns_max_tcp_conns were open, or dns_max_tcp_conns_per_client from the same client.", nil, nil)
)

// Collectors returns the DNS server's series, for the agent's registry.
func (s *Server) Collectors() []prometheus.Collector { return []prometheus.Collector{dnsCollector{s}} }

// dnsCollector is unchecked (Describe sends nothing): which (qtype,
// rcode) pairs exist depends on what was asked.
type dnsCollector struct{ s *Server }

func (dnsCollector) Describe(chan<- *prometheus.Desc) {}

func (c dnsCollector) Collect(ch chan<- prometheus.Metric) {
	dm := c.s.Metrics()
	for _, q := range dm.Questions {
		ch <- prometheus.MustNewConstMetric(descQuestions, prometheus.CounterValue, float64(q.Count), q.Qtype, q.Rcode)
	}
	buckets := make(map[float64]uint64, len(dm.Latency.Buckets))
	for _, b := range dm.Latency.Buckets {
		buckets[b.UpperBound.Seconds()] = b.Count
	}
	ch <- prometheus.MustNewConstHistogram(descLatency, dm.Latency.Count, dm.Latency.Sum.Seconds(), buckets)
	ch <- prometheus.MustNewConstMetric(descRRL, prometheus.CounterValue, float64(dm.RateLimited.Dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(descRRL, prometheus.CounterValue, float64(dm.RateLimited.Slipped), "slipped")
	ch <- prometheus.MustNewConstMetric(descTCP, prometheus.CounterValue, float64(dm.TCPRefused))
}
