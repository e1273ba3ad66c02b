package gossip

import "github.com/prometheus/client_golang/prometheus"

// A pool's series, labelled with the pool ("lan", "wan"), read at each
// scrape.
var (
	descMembers   = prometheus.NewDesc("cairn_gossip_members", "Members of a gossip pool as this agent sees them, by pool and status (alive, failed, left; incompatible: peers refused for their protocol version, which are no members).", []string{"pool", "status"}, nil)
	descDropped   = prometheus.NewDesc("cairn_gossip_log_lines_dropped_total", "Log lines about bad gossip packets left out by the per-source rate limit, by pool.", []string{"pool"}, nil)
	descConflicts = prometheus.NewDesc("cairn_gossip_name_conflicts_total", "Times two agents claimed one member name, by pool.", []string{"pool"}, nil)
	descRefused   = prometheus.NewDesc("cairn_gossip_incompatible_total",
		"Times a peer was refused for speaking a cairn protocol version outside this agent's range, by pool (each of its gossip messages counts); cairn_gossip_members{status=\"incompatible\"} counts the peers.", []string{"pool"}, nil)
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
	n[StatusIncompatible] = len(p.Incompatible())
	for _, st := range []Status{StatusAlive, StatusFailed, StatusLeft, StatusIncompatible} {
		ch <- prometheus.MustNewConstMetric(descMembers, prometheus.GaugeValue, float64(n[st]), pool, st.String())
	}
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(p.DroppedLogLines()), pool)
	ch <- prometheus.MustNewConstMetric(descConflicts, prometheus.CounterValue, float64(p.NameConflicts()), pool)
	ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(p.IncompatibleRefusals()), pool)
}
