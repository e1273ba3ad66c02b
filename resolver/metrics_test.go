package resolver

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/resolver/resolvertest"
)

// TestMetricsQuestions answers questions of several types and rcodes and
// expects each counted once under its qtype and rcode, and once in the
// latency histogram.
func TestMetricsQuestions(t *testing.T) {
	s := newTestServer(t, newFakeSource(), nil)
	twoQuestions := query("web.service.cluster.", dns.TypeA)
	twoQuestions.Question = append(twoQuestions.Question, twoQuestions.Question[0])
	badVersion := query("web.service.cluster.", dns.TypeA)
	badVersion.SetEdns0(1232, false)
	badVersion.IsEdns0().SetVersion(1)
	response := query("web.service.cluster.", dns.TypeA)
	response.Response = true
	for _, req := range []*dns.Msg{
		query("web.service.cluster.", dns.TypeSRV),
		query("web.service.cluster.", dns.TypeSRV),
		query("web.service.cluster.", dns.TypeA),
		query("db.service.cluster.", dns.TypeSRV),         // NXDOMAIN
		query("web.service.cluster.", dns.TypeCAA),        // OTHER, NOERROR (no data)
		query("web.service.cluster.", dns.TypeAXFR),       // OTHER, REFUSED
		query("1.0.0.10.in-addr.arpa.", dns.TypePTR),      // a reverse lookup
		query("cluster.", dns.TypeSOA),                    // the apex
		twoQuestions,                                      // OTHER, FORMERR
		badVersion,                                        // A, BADVERS: OTHER
		response,                                          // not answered, not counted
		query("example.com.", dns.TypeNS),                 // outside, no recursor: REFUSED
		query("node1.node.cluster.", dns.TypeTXT),         // a node's TXT
		query("web.service.cluster.", dns.TypeANY),        // ANY
		query("web.service.cluster.", dns.TypeAAAA),       // no data
		query("0a000001.addr.dc1.cluster.", dns.TypeAAAA), // an IPv4 .addr. name asked AAAA
	} {
		s.ServeDNS(resolvertest.NewRecorder("udp"), req)
	}
	got := s.Metrics()
	want := []QuestionCount{
		{"A", "NOERROR", 1},
		{"A", "OTHER", 1},
		{"AAAA", "NOERROR", 2},
		{"SRV", "NOERROR", 2},
		{"SRV", "NXDOMAIN", 1},
		{"PTR", "NOERROR", 1},
		{"TXT", "NOERROR", 1},
		{"NS", "REFUSED", 1},
		{"SOA", "NOERROR", 1},
		{"ANY", "NOERROR", 1},
		{"OTHER", "NOERROR", 1},
		{"OTHER", "FORMERR", 1},
		{"OTHER", "REFUSED", 1},
	}
	if !slices.Equal(got.Questions, want) {
		t.Errorf("questions:\ngot  %v\nwant %v", got.Questions, want)
	}
	var total uint64
	for _, q := range got.Questions {
		total += q.Count
	}
	if got.Latency.Count != total {
		t.Errorf("latency count: got %d, want %d, the questions answered", got.Latency.Count, total)
	}
	checkHistogram(t, got.Latency)
	if got.Latency.Sum <= 0 {
		t.Errorf("latency sum: got %v, want more than 0", got.Latency.Sum)
	}
}

// TestMetricsPanic expects a query whose handling panicked counted once,
// as the SERVFAIL it was answered with.
func TestMetricsPanic(t *testing.T) {
	s := newTestServer(t, panicSource{}, nil)
	s.ServeDNS(resolvertest.NewRecorder("udp"), query("web.service.cluster.", dns.TypeSRV))
	got := s.Metrics()
	if want := []QuestionCount{{"SRV", "SERVFAIL", 1}}; !slices.Equal(got.Questions, want) {
		t.Errorf("questions: got %v, want %v", got.Questions, want)
	}
	if got.Latency.Count != 1 {
		t.Errorf("latency count: got %d, want 1", got.Latency.Count)
	}
}

// TestMetricsHistogram puts latencies in buckets: a bound is inclusive,
// and what is past the last bound counts only in Count.
func TestMetricsHistogram(t *testing.T) {
	s := &Server{metrics: &metrics{}}
	for _, d := range []time.Duration{
		0, 50 * time.Microsecond, // both ≤ 50µs
		50*time.Microsecond + 1,      // ≤ 100µs
		3 * time.Millisecond,         // ≤ 5ms
		time.Second,                  // ≤ 1s
		2 * time.Second, time.Minute, // past the last bound
	} {
		s.metrics.add(dns.TypeA, dns.RcodeSuccess, d)
	}
	h := s.Metrics().Latency
	checkHistogram(t, h)
	want := []uint64{2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 5} // cumulative, per bound
	var got []uint64
	for _, b := range h.Buckets {
		got = append(got, b.Count)
	}
	if !slices.Equal(got, want) {
		t.Errorf("buckets: got %v, want %v", got, want)
	}
	if h.Count != 7 {
		t.Errorf("count: got %d, want 7", h.Count)
	}
	if want := 50*time.Microsecond*2 + 1 + 3*time.Millisecond + 3*time.Second + time.Minute; h.Sum != want {
		t.Errorf("sum: got %v, want %v", h.Sum, want)
	}
}

// TestMetricsConcurrent answers from many goroutines at once (run it with
// the race detector) and expects no answer lost.
func TestMetricsConcurrent(t *testing.T) {
	s := newTestServer(t, newStaticSource(instance("node1", "10.0.0.1", "web", "", 80)), nil)
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			w := resolvertest.NewRecorder("udp")
			req := query("web.service.cluster.", dns.TypeA)
			for range each {
				s.ServeDNS(w, req)
			}
		})
	}
	for range 10 { // scrapes meanwhile
		checkHistogram(t, s.Metrics().Latency)
	}
	wg.Wait()
	got := s.Metrics()
	if want := []QuestionCount{{"A", "NOERROR", goroutines * each}}; !slices.Equal(got.Questions, want) {
		t.Errorf("questions: got %v, want %v", got.Questions, want)
	}
	if got.Latency.Count != goroutines*each {
		t.Errorf("latency count: got %d, want %d", got.Latency.Count, goroutines*each)
	}
}

// checkHistogram checks h's shape: every bound, increasing, with
// cumulative counts no more than Count.
func checkHistogram(t *testing.T, h Histogram) {
	t.Helper()
	if len(h.Buckets) != len(latencyBounds) {
		t.Fatalf("got %d buckets, want %d", len(h.Buckets), len(latencyBounds))
	}
	for i, b := range h.Buckets {
		if b.UpperBound != latencyBounds[i] {
			t.Errorf("bucket %d: got bound %v, want %v", i, b.UpperBound, latencyBounds[i])
		}
		if i > 0 && b.Count < h.Buckets[i-1].Count {
			t.Errorf("bucket %d: got count %d, less than the one before (%d): not cumulative", i, b.Count, h.Buckets[i-1].Count)
		}
	}
	if last := h.Buckets[len(h.Buckets)-1].Count; last > h.Count {
		t.Errorf("last bucket %d is more than Count %d", last, h.Count)
	}
}

func TestQtypeRcodeIndex(t *testing.T) {
	for i, name := range qtypeNames[:len(qtypeNames)-1] {
		if got := qtypeIndex(dns.StringToType[name]); got != i {
			t.Errorf("qtypeIndex(%s): got %d, want %d", name, got, i)
		}
	}
	for _, qtype := range []uint16{0, dns.TypeCAA, dns.TypeHTTPS, dns.TypeAXFR, 65535} {
		if got := qtypeIndex(qtype); qtypeNames[got] != "OTHER" {
			t.Errorf("qtypeIndex(%d): got %s, want OTHER", qtype, qtypeNames[got])
		}
	}
	for i, name := range rcodeNames[:len(rcodeNames)-1] {
		if dns.RcodeToString[i] != name {
			t.Errorf("rcode %d: named %s, miekg/dns names it %s", i, name, dns.RcodeToString[i])
		}
		if got := rcodeIndex(i); got != i {
			t.Errorf("rcodeIndex(%d): got %d", i, got)
		}
	}
	for _, rcode := range []int{-1, dns.RcodeYXDomain, dns.RcodeBadVers, 4095} {
		if got := rcodeIndex(rcode); rcodeNames[got] != "OTHER" {
			t.Errorf("rcodeIndex(%d): got %s, want OTHER", rcode, rcodeNames[got])
		}
	}
}

// BenchmarkMetricsObserve is what counting one answer adds to ServeDNS:
// the clock read at its start and the one at its end, and the adds.
func BenchmarkMetricsObserve(b *testing.B) {
	m := metrics{epoch: time.Now()}
	req := query("web.service.cluster.", dns.TypeSRV)
	b.ReportAllocs()
	for b.Loop() {
		m.observe(req, dns.RcodeSuccess, m.now())
	}
}
