package agent

import (
	"math"
	"testing"
	"time"

	"github.com/cairndns/cairn/resolver"
)

// TestAppendPrometheus pins the text format cairn writes: HELP and TYPE
// lines, labels, escaping, histogram lines and number formatting.
func TestAppendPrometheus(t *testing.T) {
	t.Parallel()
	dns := dnsFamilies(resolver.DNSMetrics{
		Questions: []resolver.QuestionCount{{Qtype: "SRV", Rcode: "NOERROR", Count: 1234567}},
		Latency: resolver.Histogram{
			Buckets: []resolver.Bucket{{UpperBound: 50 * time.Microsecond, Count: 1}, {UpperBound: 2500 * time.Microsecond, Count: 2}},
			Count:   3, Sum: 1500 * time.Millisecond,
		},
		RateLimited: resolver.RateLimited{Dropped: 7, Slipped: 3},
		TCPRefused:  2,
	})
	fs := append(dns,
		gauge("odd", "Help with a \\ and a\nnewline.", 0.25),
		family{name: "lbl", help: "Labels.", kind: kindGauge, samples: []sample{{labels: []label{{"v", "a\"b\\c\nd"}}, value: math.Inf(1)}}},
	)
	want := `# HELP cairn_dns_questions_total DNS questions answered, by query type and rcode.
# TYPE cairn_dns_questions_total counter
cairn_dns_questions_total{qtype="SRV",rcode="NOERROR"} 1234567
# HELP cairn_dns_answer_seconds Time from a DNS query's arrival to its reply having been written.
# TYPE cairn_dns_answer_seconds histogram
cairn_dns_answer_seconds_bucket{le="5e-05"} 1
cairn_dns_answer_seconds_bucket{le="0.0025"} 2
cairn_dns_answer_seconds_bucket{le="+Inf"} 3
cairn_dns_answer_seconds_sum 1.5
cairn_dns_answer_seconds_count 3
# HELP cairn_dns_rate_limited_total UDP replies over the response rate limit, by what became of them (dropped, or slipped: sent truncated).
# TYPE cairn_dns_rate_limited_total counter
cairn_dns_rate_limited_total{action="dropped"} 7
cairn_dns_rate_limited_total{action="slipped"} 3
# HELP cairn_dns_tcp_refused_total TCP DNS connections closed at once because dns_max_tcp_conns were open.
# TYPE cairn_dns_tcp_refused_total counter
cairn_dns_tcp_refused_total 2
# HELP odd Help with a \\ and a\nnewline.
# TYPE odd gauge
odd 0.25
# HELP lbl Labels.
# TYPE lbl gauge
lbl{v="a\"b\\c\nd"} +Inf
`
	if got := string(appendPrometheus(nil, fs)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFormatFloat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-3, "-3"}, {1e6, "1000000"}, {1 << 53, "9007199254740992"},
		{1e15, "1000000000000000"}, {1 << 54, "1.8014398509481984e+16"}, {0.1, "0.1"}, {5e-05, "5e-05"}, {1.5, "1.5"},
		{math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"},
	} {
		if got := formatFloat(tt.v); got != tt.want {
			t.Errorf("formatFloat(%v): got %q, want %q", tt.v, got, tt.want)
		}
	}
}
