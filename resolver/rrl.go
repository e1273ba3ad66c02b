package resolver

import (
	"net"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Response-rate limiting (Config.RRL), after BIND's. It is there against
// reflection: a UDP reply goes wherever the query's source address says,
// and a spoofed one names the victim. So only replies that would amplify
// are counted: over UDP, to a client that did not prove its address with
// a server cookie (cookie.go), and more than RRLConfig.MinAmplification
// times the size of their query. Such a reply is charged to an account
// named by the client's network (its address cut to a prefix) and by what
// the reply is:
//
//   - a NOERROR reply (records or none), by its question's name and type,
//     so a client asking for many names is limited per name, as a
//     resolver behind which many clients sit needs;
//   - an NXDOMAIN, one account for every name: names that do not exist
//     are free to make up, so they must not each get a rate of their own;
//   - any other rcode (REFUSED, SERVFAIL, FORMERR, ...), one account;
//
// and, with RRLConfig.AllPerSecond, to the network's account of every
// reply, so that asking many names does not multiply the rate.
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
	rrlKindAll
)

// rrl is the limiter of a Server with RRL enabled. It is safe for
// concurrent use.
type rrl struct {
	alike  rrlRate // the accounts of alike replies
	all    rrlRate // the accounts of all a network's replies; interval 0: none
	slip   uint32  // every slip-th limited reply of an account slips; 0: none
	minAmp int     // RRLConfig.MinAmplification
	v4bits int     // prefix lengths of a client network
	v6bits int
	sets   []rrlSet
}

// rrlRate is the rate of a kind of account.
type rrlRate struct {
	interval int64 // nanoseconds one reply moves an account's tat
	window   int64 // how far past now a tat may be, the burst: 1s - interval
}

func newRRLRate(perSecond int) rrlRate {
	if perSecond <= 0 {
		return rrlRate{}
	}
	interval := int64(time.Second) / int64(perSecond)
	return rrlRate{interval: interval, window: int64(time.Second) - interval}
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
	return &rrl{
		alike:  newRRLRate(cfg.ResponsesPerSecond),
		all:    newRRLRate(cfg.AllPerSecond),
		slip:   uint32(cfg.Slip),
		minAmp: cfg.MinAmplification,
		v4bits: cfg.IPv4PrefixLength,
		v6bits: cfg.IPv6PrefixLength,
		sets:   make([]rrlSet, rrlSets),
	}
}

// amplifies reports whether a reply of rlen bytes to a query of qlen is
// counted: more than MinAmplification times the query.
func (l *rrl) amplifies(qlen, rlen int) bool {
	return rlen > l.minAmp*qlen
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
	network, ok := l.network(client)
	if !ok {
		return rrlSend
	}
	act := l.take(l.key(network, rcode, q), l.alike, int64(now))
	if act == rrlSend && l.all.interval > 0 {
		act = l.take(finish(mix(network, rrlKindAll)), l.all, int64(now))
	}
	return act
}

// take charges the account of key, of the given rate, at now.
func (l *rrl) take(key uint64, rate rrlRate, now int64) rrlAction {
	set := &l.sets[key&(rrlSets-1)]
	set.mu.Lock()
	defer set.mu.Unlock()
	e := set.account(key, now)
	if e.tat-now > rate.window {
		e.limited++
		if l.slip > 0 && e.limited%l.slip == 0 {
			return rrlSlip
		}
		return rrlDrop
	}
	e.tat = max(e.tat, now) + rate.interval
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

// mix returns h with the byte b hashed in.
func mix(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime }

// finish returns the key of the hash h.
func finish(h uint64) uint64 {
	h ^= h >> 29 // the low bits pick the set: fold the high ones in
	if h == 0 {
		h = 1
	}
	return h
}

// network returns the hash of client's network, and false for a client
// that is not a UDP address (never limited).
func (l *rrl) network(client net.Addr) (uint64, bool) {
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
	return h, true
}

// key returns the key of the account of alike replies of a client's
// network (its hash h) a reply with rcode to the question q (nil: not
// exactly one) is charged to.
func (l *rrl) key(h uint64, rcode int, q *dns.Question) uint64 {
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
	return finish(h)
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
