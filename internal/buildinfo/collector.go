package buildinfo

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector returns cairn_build_info: a gauge of 1 whose labels say which
// build this is (as Prometheus's own <name>_build_info series do), so a
// dashboard can count the versions a cluster runs while it is upgraded.
func Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "cairn_build_info",
		Help: "Always 1; the labels say the version, VCS revision, protocol version and Go version of the agent's binary.",
		ConstLabels: prometheus.Labels{
			"version": Version(), "revision": Revision(), "protocol": strconv.Itoa(int(Protocol)),
			"protocol_min": strconv.Itoa(int(ProtocolMin)), "protocol_max": strconv.Itoa(int(ProtocolMax)),
			"goversion": Read().GoVersion,
		},
	})
	g.Set(1)
	return g
}
