package resolver

import (
	"net"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Response-rate limiting (Config.RRL), after BIND's. Each UDP reply is
// charged to an account named by the client's network (its address cut
// to a prefix) and by what the reply is:
//
//   - a NOERROR reply (records or none), by its question's name and type,
//     so a client asking for many names is limited per name, as a
//     resolver behind which many clients sit needs;
//   - an NXDOMAIN, one account for every name: names that do not exist
//     are free to make up, so they must not each get a rate of their own;
//   - any other rcode (REFUSED, SERVFAIL, FORMERR, ...), one account.
//
// An account is a token bucket kept as GCRA's "theoretical arrival time"
// (tat): each reply moves it interval later; a reply that would move it
// more than window past now is over the rate. So up to ResponsesPerSecond
// replies may go at once, then one per interval.
//
// The accounts live in a fixed table, allocated when the server is made:
// memory is bounded whatever the traffic. The table is a set-associative
// cache: a key's hash picks a set, and the key takes any of its rrlWays
// entries, evicting the one charged least recently (the smallest tat). An
// account being flooded is charged all the time, so other traffic evicts
// it only by being as heavy in the same set; an evicted account starts
// afresh with a full bucket, which costs at most one more burst. Each set
// has its own lock, held for a few comparisons.

const (
	// rrlSets is the number of sets of the table, a power of two; each
	// holds rrlWays accounts: 65,536 accounts in about 1.7 MB.
	rrlSets = 1 << 14
	rrlWays = 4
	// maxRRLRate bounds RRLConfig.ResponsesPerSecond: one reply per
	// microsecond is far above any rate worth limiting to.
	maxRRLRate = 1_000_000
)

// rrlAction is what becomes of a reply.
type rrlAction uint8

const (
	rrlSend rrlAction = iota // within the rate: sent
	rrlDrop                  // over it: not sent
	rrlSlip                  // over it: sent truncated and empty
)

// The kinds of reply that are accounted apart (see above).
const (
	rrlKindAnswer = 1 + iota
	rrlKindNXDomain
	rrlKindError
)

// rrl is the limiter of a Server with RRL enabled. It is safe for
// concurrent use.
type rrl struct {
	interval int64  // nanoseconds one reply moves an account's tat
	window   int64  // how far past now a tat may be, the burst: 1s - interval
	slip     uint32 // every slip-th limited reply of an account slips; 0: none
	v4bits   int    // prefix lengths of a client network
	v6bits   int
	sets     []rrlSet
}

// rrlSet is one set of the table.
type rrlSet struct {
	mu sync.Mutex
	e  [rrlWays]rrlEntry
}

// rrlEntry is one account.
type rrlEntry struct {
	key     uint64 // its hash (never 0); 0 marks a free entry
	tat     int64  // in nanoseconds since the server's epoch (metrics.now)
	limited uint32 // replies limited since the account was made, for slip
}

// newRRL returns the limiter cfg describes, or nil when it is off.
func newRRL(cfg RRLConfig) *rrl {
	if !cfg.Enabled {
		return nil
	}
	interval := int64(time.Second) / int64(cfg.ResponsesPerSecond)
	return &rrl{
		interval: interval,
		window:   int64(time.Second) - interval,
		slip:     uint32(cfg.Slip),
		v4bits:   cfg.IPv4PrefixLength,
		v6bits:   cfg.IPv6PrefixLength,
		sets:     make([]rrlSet, rrlSets),
	}
}

// check charges m, a reply about to be sent over UDP to client, to its
// account at now (the time since the server's epoch), and says what to do
// with it. It does not allocate.
func (l *rrl) check(client net.Addr, m *dns.Msg, now time.Duration) rrlAction {
	var q *dns.Question
	if len(m.Question) == 1 {
		q = &m.Question[0]
	}
	return l.charge(client, m.Rcode, q, now)
}

// charge is check for a reply known by its rcode and question (nil when
// it has not exactly one), as a reply kept in wire form is (wirecache.go).
func (l *rrl) charge(client net.Addr, rcode int, q *dns.Question, now time.Duration) rrlAction {
	key, ok := l.key(client, rcode, q)
	if !ok {
		return rrlSend
	}
	t := int64(now)
	set := &l.sets[key&(rrlSets-1)]
	set.mu.Lock()
	defer set.mu.Unlock()
	e := set.account(key, t)
	if e.tat-t > l.window {
		e.limited++
		if l.slip > 0 && e.limited%l.slip == 0 {
			return rrlSlip
		}
		return rrlDrop
	}
	e.tat = max(e.tat, t) + l.interval
	return rrlSend
}

// account returns the entry of key, made afresh (with a full bucket) in
// place of the least recently charged one when there is none.
func (s *rrlSet) account(key uint64, now int64) *rrlEntry {
	victim := &s.e[0]
	for i := range s.e {
		e := &s.e[i]
		if e.key == key {
			return e
		}
		if e.tat < victim.tat {
			victim = e
		}
	}
	*victim = rrlEntry{key: key, tat: now}
	return victim
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// key returns the hash naming the account of a reply with rcode to the
// question q (nil: not exactly one) sent to client, and false for a
// client that is not a UDP address (never limited).
func (l *rrl) key(client net.Addr, rcode int, q *dns.Question) (uint64, bool) {
	a, ok := client.(*net.UDPAddr)
	if !ok {
		return 0, false
	}
	ip, bits, family := a.IP.To4(), l.v4bits, byte(4)
	if ip == nil {
		ip, bits, family = a.IP.To16(), l.v6bits, 6
		if ip == nil {
			return 0, false
		}
	}
	h := uint64(fnvOffset)
	h = (h ^ uint64(family)) * fnvPrime
	for i := 0; i < bits/8; i++ {
		h = (h ^ uint64(ip[i])) * fnvPrime
	}
	if rest := bits % 8; rest != 0 {
		h = (h ^ uint64(ip[bits/8]&(0xFF<<(8-rest)))) * fnvPrime
	}
	kind := rrlKindError
	switch {
	case rcode == dns.RcodeSuccess && q != nil:
		kind = rrlKindAnswer
	case rcode == dns.RcodeNameError:
		kind = rrlKindNXDomain
	}
	h = (h ^ uint64(kind)) * fnvPrime
	if kind == rrlKindAnswer {
		h = (h ^ uint64(q.Qtype>>8)) * fnvPrime
		h = (h ^ uint64(q.Qtype&0xFF)) * fnvPrime
		for i := 0; i < len(q.Name); i++ { // case-insensitively: a client may vary the case (0x20)
			c := q.Name[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			h = (h ^ uint64(c)) * fnvPrime
		}
	}
	h ^= h >> 29 // the low bits pick the set: fold the high ones in
	if h == 0 {
		h = 1
	}
	return h, true
}

// slip makes m the truncated reply sent instead of a limited one: TC set,
// no records but the OPT record, the header and question kept, so that a
// real client asks again over TCP.
func slip(m *dns.Msg) {
	m.Truncated = true
	m.Answer, m.Ns = nil, nil
	var opt []dns.RR
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			opt = []dns.RR{rr}
		}
	}
	m.Extra = opt
}
