package rpc

import (
	"log/slog"
	"sync"
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

// ClockSkewWarnAt is how far a server's clock may be from this node's
// before the pool warns (and the CLI, showing the skew it measured).
const ClockSkewWarnAt = time.Second

// skewMaxRoundTrip is the longest round trip a call may take for its
// reply to measure the clocks: a longer one (a blocking query, a slow
// write) leaves too wide a window to say anything.
const skewMaxRoundTrip = 250 * time.Millisecond

// skewMeter keeps each server's clock skew in a gauge and in a map that
// autopilot and the members list read (Pool.ClockSkew), and warns,
// paced, about those past ClockSkewWarnAt.
type skewMeter struct {
	logger *slog.Logger
	offset time.Duration // PoolConfig.ClockOffset
	gauge  *prometheus.GaugeVec
	warned sampler

	mu   sync.Mutex
	last map[string]time.Duration // by server address, like the gauge
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
		last:   make(map[string]time.Duration),
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
	m.mu.Lock()
	m.last[addr] = skew
	m.mu.Unlock()
	if skew.Abs() <= ClockSkewWarnAt {
		return
	}
	if ok, dropped := m.warned.allow(answered); ok {
		m.logger.Warn("a server's clock is off from this node's by more than "+ClockSkewWarnAt.String()+
			"; requests do not depend on it, but ACL token expiry and the times the API shows do: check NTP on both",
			"peer", addr, "skew", skew.Round(time.Millisecond), "dropped", dropped)
	}
}

// ClockSkew returns how far the wall clock of the server at addr was
// ahead of this node's (negative: behind) when the pool last measured it,
// within half a round trip; ok is false when it never has (no call to it
// yet, or none quick enough to measure).
func (p *Pool) ClockSkew(addr string) (skew time.Duration, ok bool) {
	p.skew.mu.Lock()
	defer p.skew.mu.Unlock()
	skew, ok = p.skew.last[addr]
	return skew, ok
}
