package loopback

import (
	"context"
	"time"

	"github.com/miekg/dns"
)

// SRVCount asks a's DNS for name's SRV records. ok is false when there was
// no usable answer (timeout, SERVFAIL): that proves nothing either way.
func SRVCount(ctx context.Context, a *Agent, name string) (n int, ok bool) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeSRV)
	r, _, err := (&dns.Client{Timeout: 500 * time.Millisecond}).ExchangeContext(ctx, m, a.DNSAddr())
	if err != nil || (r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError) {
		return 0, false
	}
	for _, rr := range r.Answer {
		if _, isSRV := rr.(*dns.SRV); isSRV {
			n++
		}
	}
	return n, true
}

// SteadyStreak is how many answers in a row (at a 20ms poll, half a
// second) make an answer steady: a client reads from one server, which may
// trail the leader for a moment.
const SteadyStreak = 25

// Steady turns a check into a Poll condition that holds once the check
// passed SteadyStreak times in a row. When since is not nil, it gets the
// time the streak's first check returned.
func Steady(check func(context.Context) bool, since *time.Time) func(context.Context) (bool, error) {
	streak := 0
	return func(ctx context.Context) (bool, error) {
		if !check(ctx) {
			streak = 0
			return false, nil
		}
		if streak == 0 && since != nil {
			*since = time.Now()
		}
		streak++
		return streak >= SteadyStreak, nil
	}
}
