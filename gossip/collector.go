package gossip

import "github.com/prometheus/client_golang/prometheus"

// A pool's series, labelled with the pool ("lan", "wan"), read at each
// scrape.
var (
	descMembers   = prometheus.NewDesc("cairn_gossip_members", "Members of a gossip pool as this agent sees them, by pool and status (alive, failed, left).", []string{"pool", "status"}, nil)
	descDropped   = prometheus.NewDesc("cairn_gossip_log_lines_dropped_total", "Log lines about bad gossip packets left out by the per-source rate limit, by pool.", []string{"pool"}, nil)
	descConflicts = prometheus.NewDesc("cairn_gossip_name_conflicts_total", "Times two agents claimed one member name, by pool.", []string{"pool"}, nil)
)

// Collectors returns the pool's series, for the agent's registry.
func (p *Pool) Collectors() []prometheus.Collector { return []prometheus.Collector{poolCollector{p}} }

// poolCollector is unchecked (Describe sends nothing): the LAN and WAN
// pools' collectors share descriptions, told apart by the pool label.
type poolCollector struct{ p *Pool }

func (poolCollector) Describe(chan<- *prometheus.Desc) {}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	p, pool := c.p, c.p.cfg.Pool.String()
	n := map[Status]int{}
	for _, m := range p.Members() {
		n[m.Status]++
	}
	for _, st := range []Status{StatusAlive, StatusFailed, StatusLeft} {
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(n[st]), pool, st.String())
	}
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(p.DroppedLogLines()), pool)
	ch <- prometheus.MustNewConstMetric(descConflicts, prometheus.CounterValue, float64(p.NameConflicts()), pool)
}
