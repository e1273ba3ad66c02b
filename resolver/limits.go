package resolver

import (
	"net"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// limitAnswers applies the answer limits to m, a reply whose answer
// section is already shuffled: Config.ARecordLimit caps the A and AAAA
// records (together) over any transport, and Config.UDPAnswerLimit caps
// all answer records over UDP. Records cut this way are a policy, not a
// lack of room, so TC is not set for them; when answers were cut, the
// address records in the additional section that no remaining SRV record
// targets are dropped too.
//
// An ANY question over UDP gets one record (see minimalANY).
//
// Only the zone's own answers are limited, which are exactly those with
// AA set: a forwarded answer is passed on whole, since cutting an
// upstream RRset would break its signature. m's sections may be shared
// with other replies; they are resliced or copied, never written.
func (s *Server) limitAnswers(w dns.ResponseWriter, m *dns.Msg) {
	if !m.Authoritative {
		return
	}
	n := len(m.Answer)
	if s.cfg.ARecordLimit > 0 {
		m.Answer = capAddresses(m.Answer, s.cfg.ARecordLimit)
	}
	tcp := isTCP(w)
	if l := s.cfg.UDPAnswerLimit; l > 0 && len(m.Answer) > l && !tcp {
		m.Answer = m.Answer[:l:l]
	}
	if !tcp && len(m.Question) == 1 && m.Question[0].Qtype == dns.TypeANY {
		minimalANY(m)
		return
	}
	if len(m.Answer) < n {
		m.Extra = targetedGlue(m.Answer, m.Extra)
	}
}

// limitSigned is limitAnswers for a signed reply: a signature covers a
// whole RRset, so an RRset cut by Config.ARecordLimit or UDPAnswerLimit
// would not validate, and those limits are not applied. ANY over UDP,
// which minimalANY would cut to one record, gets an empty truncated reply
// instead: the client asks again over TCP for the whole signed answer,
// and the agent still sends nothing larger than the query to an address
// it has not verified.
func limitSigned(w dns.ResponseWriter, m *dns.Msg) {
	if !m.Authoritative || isTCP(w) || len(m.Question) != 1 || m.Question[0].Qtype != dns.TypeANY {
		return
	}
	m.Answer, m.Ns = nil, nil
	m.Extra = slices.DeleteFunc(slices.Clone(m.Extra), func(rr dns.RR) bool { return rr.Header().Rrtype != dns.TypeOPT })
	m.Truncated = true
}

// minimalANY cuts m, the zone's answer to an ANY question over UDP, to
// one record: the first address record of the (shuffled) answer, else its
// first record (the apex's SOA or NS); the additional section keeps only
// the OPT record. So the reply is about the size of the query, and ANY
// cannot make the agent an amplifier, whatever the number of instances.
//
// RFC 8482 lets a server answer ANY with any subset of what the name
// owns, or with a synthesized HINFO "RFC8482" record. One real record is
// as small (an A record packs to 16 bytes, that HINFO to 22) and still
// useful to a client that asks ANY for an address, as some old tools do;
// docs/reference/dns.md promises the address records. The A set is cut like
// Config.UDPAnswerLimit cuts it, and as that limit, without TC: a client
// that wants the whole set asks for A or AAAA, or over TCP, where ANY is
// answered whole.
func minimalANY(m *dns.Msg) {
	if len(m.Answer) > 1 {
		i := slices.IndexFunc(m.Answer, isAddress)
		i = max(i, 0)
		m.Answer = m.Answer[i : i+1 : i+1]
	}
	notOPT := func(rr dns.RR) bool { return rr.Header().Rrtype != dns.TypeOPT }
	if slices.ContainsFunc(m.Extra, notOPT) {
		m.Extra = slices.DeleteFunc(slices.Clone(m.Extra), notOPT)
	}
}

// isTCP reports whether w answers over TCP.
func isTCP(w dns.ResponseWriter) bool {
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	return tcp
}

// isAddress reports whether rr is an A or AAAA record.
func isAddress(rr dns.RR) bool {
	t := rr.Header().Rrtype
	return t == dns.TypeA || t == dns.TypeAAAA
}

// capAddresses returns rrs with only the first limit of its A and AAAA
// records, other records kept in place. It returns rrs itself when
// nothing is cut, else a new slice.
func capAddresses(rrs []dns.RR, limit int) []dns.RR {
	seen := 0
	for i, rr := range rrs {
		if !isAddress(rr) {
			continue
		}
		if seen++; seen <= limit {
			continue
		}
		out := make([]dns.RR, i, len(rrs)-1)
		copy(out, rrs[:i])
		for _, rr := range rrs[i+1:] {
			if !isAddress(rr) {
				out = append(out, rr)
			}
		}
		return out
	}
	return rrs
}

// targetedGlue returns extra without the A and AAAA records that no SRV
// record of answer targets. It returns extra itself when answer holds no
// SRV record or nothing is dropped, else a new slice.
func targetedGlue(answer, extra []dns.RR) []dns.RR {
	targeted := func(name string) bool {
		for _, rr := range answer {
			if srv, ok := rr.(*dns.SRV); ok && strings.EqualFold(srv.Target, name) {
				return true
			}
		}
		return false
	}
	hasSRV := false
	for _, rr := range answer {
		if _, ok := rr.(*dns.SRV); ok {
			hasSRV = true
			break
		}
	}
	if !hasSRV {
		return extra
	}
	var out []dns.RR
	for i, rr := range extra {
		keep := !isAddress(rr) || targeted(rr.Header().Name)
		switch {
		case out == nil && keep:
		case out == nil:
			out = make([]dns.RR, i, len(extra)-1)
			copy(out, extra[:i])
		case keep:
			out = append(out, rr)
		}
	}
	if out == nil {
		return extra
	}
	return out
}
