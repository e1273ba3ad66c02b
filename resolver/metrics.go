package resolver

import (
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// qtypeNames names the query types counted apart, in the order of their
// counters; every other type (and a query without exactly one question)
// is counted as "OTHER", the last.
var qtypeNames = [...]string{"A", "AAAA", "SRV", "PTR", "TXT", "NS", "SOA", "ANY", "OTHER"}

// rcodeNames names the rcodes counted apart, indexed by rcode; every
// other (BADVERS, the one extended rcode the handler sends) is counted as
// "OTHER", the last.
var rcodeNames = [...]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "OTHER"}

// latencyBounds are the upper bounds (inclusive) of the answer latency
// histogram's buckets, increasing; a last bucket takes everything slower.
var latencyBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 100 * time.Millisecond, time.Second,
}

// metrics is a Server's counters. The handler updates them with a few
// atomic adds into fixed arrays: no lock, no allocation, no map.
type metrics struct {
	// epoch is when the server was made (New): the handler reads the time
	// as the monotonic time since epoch, one clock read where time.Now
	// makes two.
	epoch time.Time
	// questions counts the questions answered, by qtype and rcode index.
	questions [len(qtypeNames)][len(rcodeNames)]atomic.Uint64
	// latency counts answers by the histogram bucket their latency falls
	// in (not cumulative); the last counter is the bucket past the last
	// bound.
	latency [len(latencyBounds) + 1]atomic.Uint64
	// latencySum is the sum of all latencies, in nanoseconds.
	latencySum atomic.Uint64
	// rrlDropped and rrlSlipped count the UDP replies over the rate of
	// response-rate limiting (rrl.go): not sent, or sent truncated.
	rrlDropped, rrlSlipped atomic.Uint64
	// tcpRefused counts the TCP connections closed at once for being over
	// Config.MaxTCPConns or MaxTCPConnsPerClient (tcplimit.go).
	tcpRefused atomic.Uint64
}

// now returns the time since epoch: the start of a query, for observe.
func (m *metrics) now() time.Duration { return time.Since(m.epoch) }

// observe counts one reply to r (nil when a panic left none) with the
// given rcode, written just now, for a query that arrived at start (a
// time from now).
func (m *metrics) observe(r *dns.Msg, rcode int, start time.Duration) {
	qtype := uint16(0) // not one of qtypeNames
	if r != nil && len(r.Question) == 1 {
		qtype = r.Question[0].Qtype
	}
	m.add(qtype, rcode, m.now()-start)
}

// add counts one question of type qtype answered with rcode after d.
func (m *metrics) add(qtype uint16, rcode int, d time.Duration) {
	m.questions[qtypeIndex(qtype)][rcodeIndex(rcode)].Add(1)
	b := 0 // a linear walk: most answers take less than the first bound
	for b < len(latencyBounds) && d > latencyBounds[b] {
		b++
	}
	m.latency[b].Add(1)
	m.latencySum.Add(uint64(max(d, 0)))
}

// qtypeIndex returns the index of qtype in qtypeNames.
func qtypeIndex(qtype uint16) int {
	switch qtype {
	case dns.TypeA:
		return 0
	case dns.TypeAAAA:
		return 1
	case dns.TypeSRV:
		return 2
	case dns.TypePTR:
		return 3
	case dns.TypeTXT:
		return 4
	case dns.TypeNS:
		return 5
	case dns.TypeSOA:
		return 6
	case dns.TypeANY:
		return 7
	}
	return len(qtypeNames) - 1
}

// rcodeIndex returns the index of rcode in rcodeNames.
func rcodeIndex(rcode int) int {
	if rcode >= 0 && rcode < len(rcodeNames)-1 {
		return rcode
	}
	return len(rcodeNames) - 1
}

// DNSMetrics is a snapshot of a Server's counters, which start at zero in
// New and only grow.
type DNSMetrics struct {
	// Questions counts the questions answered by query type and rcode:
	// only the pairs answered at least once, in a fixed order (by Qtype,
	// then Rcode, as listed on QuestionCount). A query is counted once its
	// reply is written (or failed to be); a query that is itself a
	// response, never answered, is not counted.
	Questions []QuestionCount
	// Latency is the histogram of answer latencies: from a query's
	// arrival in ServeDNS to the return of the writer's WriteMsg.
	Latency Histogram
	// RateLimited counts the UDP replies response-rate limiting
	// (Config.RRL) held back.
	RateLimited RateLimited
	// TCPRefused counts the TCP connections closed as soon as they were
	// accepted, for being over Config.MaxTCPConns or MaxTCPConnsPerClient.
	TCPRefused uint64
}

// RateLimited counts the replies over the rate of response-rate limiting.
type RateLimited struct {
	// Dropped replies were not sent; nor are they counted in Questions
	// or Latency.
	Dropped uint64
	// Slipped replies were sent truncated and empty, so that the client
	// asks again over TCP; they are counted in Questions and Latency too.
	Slipped uint64
}

// QuestionCount is how many questions of one type were answered with one
// rcode.
type QuestionCount struct {
	// Qtype is "A", "AAAA", "SRV", "PTR", "TXT", "NS", "SOA", "ANY", or
	// "OTHER" for any other type and for a query without exactly one
	// question.
	Qtype string
	// Rcode is "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
	// "REFUSED", or "OTHER" for an extended rcode (BADVERS).
	Rcode string
	Count uint64
}

// Histogram is a snapshot of a latency histogram, cumulative as
// Prometheus's: each bucket counts the observations at most its bound.
type Histogram struct {
	// Buckets are in increasing UpperBound order. The last, unbounded,
	// bucket (Prometheus's le="+Inf") is Count.
	Buckets []Bucket
	// Count is the number of observations; it equals the sum of the
	// buckets' own counts, read together.
	Count uint64
	// Sum is the sum of all observations.
	Sum time.Duration
}

// Bucket is one bucket of a Histogram.
type Bucket struct {
	UpperBound time.Duration // inclusive
	Count      uint64        // observations at most UpperBound
}

// Metrics returns a snapshot of the server's counters. It reads them
// without stopping the handler, so a query being answered meanwhile may
// show in one counter and not yet in another. It may be called from any
// goroutine, at any time.
func (s *Server) Metrics() DNSMetrics {
	m := s.metrics
	var out DNSMetrics
	for qi := range m.questions {
		for ri := range m.questions[qi] {
			if n := m.questions[qi][ri].Load(); n > 0 {
				out.Questions = append(out.Questions, QuestionCount{Qtype: qtypeNames[qi], Rcode: rcodeNames[ri], Count: n})
			}
		}
	}
	h := &out.Latency
	h.Buckets = make([]Bucket, len(latencyBounds))
	for i := range m.latency {
		h.Count += m.latency[i].Load()
		if i < len(latencyBounds) {
			h.Buckets[i] = Bucket{UpperBound: latencyBounds[i], Count: h.Count}
		}
	}
	h.Sum = time.Duration(m.latencySum.Load())
	out.RateLimited = RateLimited{Dropped: m.rrlDropped.Load(), Slipped: m.rrlSlipped.Load()}
	out.TCPRefused = m.tcpRefused.Load()
	return out
}
