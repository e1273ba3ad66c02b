package rpc

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// No request depends on two machines' clocks agreeing (transit.go), but
// some things still read a wall clock another machine set: an ACL token's
// expiration time, the times the API shows and logs carry. So a pool
// measures how far each server's clock is from its own, from the time the
// server puts in its replies (responseHeader.Now) and the call's round
// trip, as NTP does: the server's time minus the midpoint of the round
// trip, within half the round trip.

// skewWarnAt is how far a server's clock may be from this node's before
// the pool warns.
const skewWarnAt = time.Second

// skewMaxRoundTrip is the longest round trip a call may take for its
// reply to measure the clocks: a longer one (a blocking query, a slow
// write) leaves too wide a window to say anything.
const skewMaxRoundTrip = 250 * time.Millisecond

// skewMeter keeps each server's clock skew in a gauge and warns, paced,
// about those past skewWarnAt.
type skewMeter struct {
	logger *slog.Logger
	offset time.Duration // PoolConfig.ClockOffset
	gauge  *prometheus.GaugeVec
	warned sampler
}

func newSkewMeter(logger *slog.Logger, offset time.Duration) *skewMeter {
	return &skewMeter{
		logger: logger,
		offset: offset,
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_rpc_clock_skew_seconds",
			Help: "How far each server's wall clock is ahead of this node's (negative: behind), measured from RPC replies, within half a round trip.",
		}, []string{"server"}),
		warned: sampler{every: time.Minute},
	}
}

// observe takes the time serverNow (Unix ns; 0 for none) that the server
// at addr put in a reply to a call sent at sent and answered at answered.
func (m *skewMeter) observe(addr string, sent, answered time.Time, serverNow int64) {
	rtt := answered.Sub(sent)
	if serverNow == 0 || rtt > skewMaxRoundTrip {
		return
	}
	// Round(0) drops the monotonic reading: this is about wall clocks.
	mid := sent.Add(rtt / 2).Add(m.offset).Round(0)
	skew := time.Unix(0, serverNow).Sub(mid)
	m.gauge.WithLabelValues(addr).Set(skew.Seconds())
	if skew.Abs() <= skewWarnAt {
		return
	}
	if ok, dropped := m.warned.allow(answered); ok {
		m.logger.Warn("a server's clock is off from this node's by more than "+skewWarnAt.String()+
			"; requests do not depend on it, but ACL token expiry and the times the API shows do: check NTP on both",
			"peer", addr, "skew", skew.Round(time.Millisecond), "dropped", dropped)
	}
}
