package resolver

import (
	"errors"
	"math/rand/v2"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// panicLogInterval is the least time between two log lines about panics.
const panicLogInterval = time.Minute

// ServeDNS answers one query. It implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	start := s.metrics.now()
	defer s.recoverPanic(w, r, start)
	if r.Response {
		return // never answer a response: two servers could bounce forever
	}
	kept, pre := s.serveKeptMsg(w, r, start) // wirecache.go: a reply kept packed
	if !kept {
		s.serveMsg(w, r, pre, start)
	}
}

// serveMsg answers r by building its reply (the slow path); pre is what
// the wire cache looked up of it already, if anything.
func (s *Server) serveMsg(w dns.ResponseWriter, r *dns.Msg, pre *prefetched, start time.Duration) {
	m, size, proved := s.reply(w, r, pre)
	p := s.getPacker()
	defer s.putPacker(p)
	wire, err := p.pack(m, size) // pack.go
	// rrl.go; TCP and cookies prove the address: never limited.
	if s.rrl != nil && !isTCP(w) && !proved {
		n := len(wire)
		if err != nil {
			n = size // left to miekg/dns: at most the size it was cut to
		}
		if s.rrl.amplifies(r.Len(), n) {
			switch s.rrl.check(w.RemoteAddr(), m, start) {
			case rrlDrop:
				s.metrics.rrlDropped.Add(1)
				return // no reply went out: not counted as one
			case rrlSlip:
				s.metrics.rrlSlipped.Add(1)
				slip(m)
				wire, err = p.pack(m, size)
			}
		}
	}
	rcode := m.Rcode
	// A lost reply is the client's to retry; nothing is logged per query.
	if err != nil {
		_ = w.WriteMsg(m)
	} else {
		// The writer must not keep wire past Write (the io.Writer
		// contract; miekg/dns's writers send it at once): the next reply
		// reuses it.
		_, _ = w.Write(wire)
	}
	s.metrics.observe(r, rcode, start)
}

// reply builds the reply to r, and returns it with the most bytes it may
// take (see fit) and whether the client proved its address with a server
// cookie (cookie.go). pre, when not nil, holds the Source's answer to r's
// service question, already asked by the wire cache, and may ask for the
// answers rotated rather than shuffled (wirecache.go).
func (s *Server) reply(w dns.ResponseWriter, r *dns.Msg, pre *prefetched) (*dns.Msg, int, bool) {
	m := new(dns.Msg)
	m.SetReply(r)
	opt, err := checkQuery(r)
	var ck queryCookie
	if err == nil && opt != nil {
		err = s.msgCookie(&ck, opt, w.RemoteAddr())
	}
	if pre != nil && pre.sized {
		ck.verified = true
	}
	var ans zones.Answer
	kind, qname := zones.KindOutside, ""
	ours := false   // the answer is cairn's own data, not a recursor's
	kept := false   // … whose sections are kept for later questions
	signed := false // … and carries DNSSEC signatures
	if err == nil {
		z, q := s.parse(strings.ToLower(r.Question[0].Name)) // names.go
		kind, qname = q.Kind, q.Qname
		if kind == zones.KindOutside {
			ans, ours, err = s.lookupReverse(qname, r.Question[0].Qtype) // reverse.go
		}
		if !ours {
			ans, err = s.lookup(z, q, r, &kept, pre)
		}
		ours = ours || kind != zones.KindOutside
		if sg := s.signer.Load(); sg != nil && kind != zones.KindOutside {
			do := opt != nil && opt.Do()
			ans, err, signed = sg.answer(z, kind, qname, r.Question[0].Qtype, ans, err, kept, do, do && opt.Co()) // dnssec.go
		}
	}
	m.Rcode = rcodeFor(ans.Result, err)
	m.Authoritative = ours && (m.Rcode == dns.RcodeSuccess || m.Rcode == dns.RcodeNameError)
	m.RecursionAvailable = len(s.cfg.Recursors) > 0 // offered (to clients setting RD), as Consul does
	m.Answer = ans.Answer                           // forwarded: the recursor's order, CNAMEs before their targets
	if ours && !ans.Ordered {
		m.Answer = reorder(ans.Answer, pre)
	}
	m.Ns = ans.Ns
	m.Extra = ans.Extra
	if ours {
		echoCase(m, qname, r.Question[0].Name) // names.go
	}
	if opt != nil {
		// A fresh slice: Extra may be shared with other answers, and both
		// this append and Truncate write into it.
		m.Extra = append(slices.Clip(m.Extra), s.opt(opt, signed, &ck))
	}
	return m, s.fit(w, m, opt, signed, ck.verified), ck.verified
}

// checkQuery checks what is answered before the name is looked at, and
// returns the query's OPT record, if any. A query with an OPT record of an
// unknown EDNS version gets BADVERS, which needs an OPT record in the
// reply too, so opt is returned with errBadVersion.
func checkQuery(r *dns.Msg) (opt *dns.OPT, err error) {
	for _, rr := range r.Extra {
		if o, ok := rr.(*dns.OPT); ok {
			if opt != nil {
				return nil, errMalformed // RFC 6891 6.1.1: at most one OPT
			}
			opt = o
		}
	}
	switch {
	case r.Opcode != dns.OpcodeQuery:
		return opt, errNotImplemented
	case len(r.Question) != 1:
		return opt, errMalformed
	case opt != nil && opt.Version() != 0:
		return opt, errBadVersion
	case r.Question[0].Qclass != dns.ClassINET:
		return opt, errRefused // only IN data is served
	}
	switch r.Question[0].Qtype {
	case dns.TypeAXFR, dns.TypeIXFR:
		return opt, errRefused // no zone transfers
	}
	return opt, nil
}

// lookup answers q, the parsed question of the query r, from z, the zone
// that parsed it. For an unknown datacenter it returns the NXDOMAIN
// sections along with the error. It sets *kept when the answer's sections
// are kept and given again to later questions (a memoized service answer,
// the zone's own records at the apex), which the signer keeps its
// signed sections by (dnssec.go). A service question's instances are
// pre's, when it is not nil.
func (s *Server) lookup(z *zones.Zone, q zones.Query, r *dns.Msg, kept *bool, pre *prefetched) (zones.Answer, error) {
	qtype := r.Question[0].Qtype
	switch q.Kind {
	case zones.KindService:
		var set *Instances
		var err error
		if pre != nil {
			set, err = pre.set, pre.err
		} else {
			ctx := newQueryContext(s.cfg.QueryTimeout)
			defer ctx.cancel()
			set, err = s.src.Instances(ctx, q.Datacenter, q.Name, q.Tag)
		}
		if err != nil {
			return failed(z, err)
		}
		ans, memoized := s.serviceAnswer(z, q, qtype, set)
		*kept = memoized
		return ans, nil
	case zones.KindNode:
		ctx := newQueryContext(s.cfg.QueryTimeout)
		defer ctx.cancel()
		node, err := s.src.Node(ctx, q.Datacenter, q.Name)
		if err != nil {
			return failed(z, err)
		}
		return z.NodeAnswer(q, qtype, node), nil
	case zones.KindQuery:
		return s.preparedQuery(z, q, qtype) // query.go
	case zones.KindAddr:
		return z.AddrAnswer(q, qtype), nil
	case zones.KindApex:
		*kept = true
		return z.ApexAnswer(qtype), nil
	case zones.KindNameserver:
		*kept = true
		return z.NameserverAnswer(qtype), nil
	case zones.KindEmptyNonTerminal:
		return z.EmptyNonTerminalAnswer(q), nil
	case zones.KindOutside:
		return s.forward(r) // recursor.go
	}
	return z.Negative(zones.NameError), nil
}

// serviceAnswer answers a service question from set, building the
// records once per set, zone, query type and name (see answerMemo), and
// reports whether the answer is kept in set's memo (for later questions to
// share).
func (s *Server) serviceAnswer(z *zones.Zone, q zones.Query, qtype uint16, set *Instances) (zones.Answer, bool) {
	if set == nil {
		return z.ServiceAnswer(q, qtype, nil), false
	}
	if ans, ok := set.memo.get(z, qtype, q.Qname); ok {
		return ans, true
	}
	var ans zones.Answer
	if len(set.Healthy) == 0 && len(set.Unhealthy) > 0 {
		ans = s.unhealthyAnswer(z, q, qtype, set.Unhealthy)
	} else {
		ans = z.ServiceAnswer(q, qtype, set.Healthy)
	}
	ans.Ordered = set.Ordered
	if set.Stale {
		return capTTL(ans, StaleTTL), false
	}
	return ans, set.memo.put(z, qtype, q.Qname, ans)
}

// capTTL returns ans with every record's TTL at most ttl, copying the
// records it changes (they may be shared).
func capTTL(ans zones.Answer, ttl uint32) zones.Answer {
	capped := func(rrs []dns.RR) []dns.RR {
		out := make([]dns.RR, len(rrs))
		for i, rr := range rrs {
			if rr.Header().Ttl > ttl {
				rr = dns.Copy(rr)
				rr.Header().Ttl = ttl
			}
			out[i] = rr
		}
		return out
	}
	ans.Answer, ans.Ns, ans.Extra = capped(ans.Answer), capped(ans.Ns), capped(ans.Extra)
	return ans
}

// failed returns the sections answering a Source error with.
func failed(z *zones.Zone, err error) (zones.Answer, error) {
	if errors.Is(err, ErrUnknownDatacenter) {
		return z.Negative(zones.NameError), err
	}
	return zones.Answer{}, err
}

// rcodeFor chooses the rcode of a reply: from the error that stopped the
// lookup, if any, else from the lookup's result. It is the one place an
// rcode is chosen.
func rcodeFor(res zones.Result, err error) int {
	if err != nil {
		switch {
		case errors.Is(err, ErrUnknownDatacenter):
			return dns.RcodeNameError
		case errors.Is(err, errMalformed):
			return dns.RcodeFormatError
		case errors.Is(err, errNotImplemented):
			return dns.RcodeNotImplemented
		case errors.Is(err, errBadVersion):
			return dns.RcodeBadVers
		case errors.Is(err, errRefused):
			return dns.RcodeRefused
		}
		return dns.RcodeServerFailure // Source failures, timeouts, panics
	}
	switch res {
	case zones.Success, zones.NoData:
		return dns.RcodeSuccess
	case zones.NameError:
		return dns.RcodeNameError
	case zones.Refused:
		return dns.RcodeRefused
	}
	return dns.RcodeServerFailure
}

// reorder returns a copy of rrs, which may be shared, shuffled; or in
// the order pre gives, when the wire cache packs a reply to keep
// (wirecache.go).
func reorder(rrs []dns.RR, pre *prefetched) []dns.RR {
	if pre != nil && pre.build {
		return pre.reordered(rrs)
	}
	if len(rrs) < 2 {
		return rrs
	}
	out := slices.Clone(rrs)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// opt returns the OPT record of a reply to a query carrying q: version 0,
// the server's UDP size, the DO bit copied (RFC 3225), the CO bit copied
// to a signed reply (RFC 9824: the client may be sent NXDOMAIN with a
// compact denial), and the COOKIE option when the query had one (ck). It
// is new for each reply because packing writes the extended rcode into
// it.
func (s *Server) opt(q *dns.OPT, signed bool, ck *queryCookie) *dns.OPT {
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetUDPSize(s.cfg.UDPSize)
	if q.Do() {
		o.SetDo()
	}
	if signed && q.Co() {
		o.SetCo()
	}
	if ck.present {
		o.Option = []dns.EDNS0{cookieOption(ck)}
	}
	return o
}

// fit cuts m to what the client can receive, setting TC when records are
// left out: over UDP 512 bytes, or the client's EDNS0 buffer size capped at
// Config.UDPSize when it proved its address with a server cookie (proved,
// or Config.Cookies off: cookie.go); over TCP the 64 KiB a DNS message can
// hold. The answer limits of Config (limits.go) are applied first, without
// TC, but not to a signed reply (signed), whose RRsets must stay whole to
// validate. Names are always compressed. It returns the size m was fitted
// to.
func (s *Server) fit(w dns.ResponseWriter, m *dns.Msg, opt *dns.OPT, signed, proved bool) int {
	size := dns.MaxMsgSize
	if _, tcp := w.RemoteAddr().(*net.TCPAddr); !tcp {
		size = dns.MinMsgSize
		if opt != nil {
			size = min(max(int(opt.UDPSize()), dns.MinMsgSize), int(s.udpLimit(proved)))
		}
	}
	if signed {
		limitSigned(w, m) // limits.go
	} else {
		s.limitAnswers(w, m) // limits.go
	}
	m.Truncate(size)
	m.Compress = true
	if !s.cfg.SetTC {
		m.Truncated = false
	}
	return size
}

// recoverPanic answers SERVFAIL to a query whose handling panicked, counts
// that answer (for a query that arrived at start), and logs the panic
// unless one was logged less than panicLogInterval ago.
func (s *Server) recoverPanic(w dns.ResponseWriter, r *dns.Msg, start time.Duration) {
	v := recover()
	if v == nil {
		return
	}
	s.answerPanic(v, w, r, start)
}

// answerPanic is recoverPanic once a panic, v, is recovered.
func (s *Server) answerPanic(v any, w dns.ResponseWriter, r *dns.Msg, start time.Duration) {
	n := s.panics.Add(1)
	now, last := time.Now().UnixNano(), s.lastPanicLog.Load()
	if now-last >= int64(panicLogInterval) && s.lastPanicLog.CompareAndSwap(last, now) {
		s.log.Error("panic answering DNS query", "panic", v, "panics", n, "stack", string(debug.Stack()))
	}
	defer func() { _ = recover() }() // the writer itself may be what panicked
	m := new(dns.Msg)
	if r != nil {
		m.SetReply(r)
	}
	m.Rcode = rcodeFor(zones.ServerFailure, errPanic)
	defer s.metrics.observe(r, m.Rcode, start) // counted even if the write panics too
	_ = w.WriteMsg(m)
}
