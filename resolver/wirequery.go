package resolver

import (
	"encoding/binary"
	"net"
	"time"

	"github.com/miekg/dns"
)

// The two ways into the wire cache (wirecache.go): a query as miekg/dns
// unpacked it (ServeDNS: TCP, DNS over TLS and HTTPS, tests), and a UDP
// datagram not unpacked at all (servePacket), which the cache answers
// without allocating. Both read only the queries the cache can answer
// exactly as the slow path would: opcode QUERY, one question of class IN
// whose name is plain (letters, digits, '-' and '_' in labels: their text
// is their wire form), no record but an OPT of version 0. Anything else
// goes to the slow path untouched.

// servePacket answers the query in the UDP datagram b, whose header
// serveDatagram accepted (miekg's DefaultMsgAcceptFunc), writing the
// reply to w (at most one Write or WriteMsg). A question the wire cache
// keeps the reply of is answered from it: b is read in place, and nothing
// is allocated. Any other is unpacked and answered by ServeDNS. When b
// does not unpack, nothing is written: the query (unpacked as far as it
// went) and the error are returned, for the caller to answer FORMERR.
// Safe for concurrent use.
func (s *Server) servePacket(w dns.ResponseWriter, b []byte) (*dns.Msg, error) {
	start := s.metrics.now()
	p := s.getPacker()
	st, pre := keptNot, (*prefetched)(nil)
	var a wireQuestion
	if p.readPacket(b, w.RemoteAddr(), &a) {
		a.qlen = len(b)
		s.admit(&a, start)
		st, pre = s.servePacketKept(w, b, &a, p, start)
	}
	s.putPacker(p)
	if st != keptNot {
		return nil, nil
	}
	return serveUnpacked(s, w, b, pre, start)
}

// servePacketKept is servePacket's wire cache part. A panic is answered
// as ServeDNS's recoverPanic answers it: SERVFAIL, counted and logged.
func (s *Server) servePacketKept(w dns.ResponseWriter, b []byte, a *wireQuestion, p *packer, start time.Duration) (st int, pre *prefetched) {
	defer func() {
		if v := recover(); v != nil {
			req := new(dns.Msg)
			_ = req.Unpack(b)
			s.answerPanic(v, w, req, start)
			st = keptSent
		}
	}()
	reply, rcode, st, pre := s.serveKept(a, p, start)
	if st == keptSent {
		_, _ = w.Write(reply) // a lost reply is the client's to retry
		s.metrics.add(a.qtype, rcode, s.metrics.now()-start)
	}
	return st, pre
}

// serveUnpacked unpacks b and answers it with the slow path, with what
// the wire cache looked up of it (pre), if anything.
func serveUnpacked(s *Server, w dns.ResponseWriter, b []byte, pre *prefetched, start time.Duration) (*dns.Msg, error) {
	req := new(dns.Msg)
	if err := req.Unpack(b); err != nil {
		return req, err
	}
	if pre == nil {
		s.ServeDNS(w, req)
		return nil, nil
	}
	defer s.recoverPanic(w, req, start)
	s.serveMsg(w, req, pre, start)
	return nil, nil
}

// serveKeptMsg offers r to the wire cache, which ServeDNS does first. It
// reports whether the cache answered (or RRL dropped the reply); if not,
// what the cache looked up, for the slow path.
func (s *Server) serveKeptMsg(w dns.ResponseWriter, r *dns.Msg, start time.Duration) (bool, *prefetched) {
	p := s.getPacker()
	defer s.putPacker(p)
	var a wireQuestion
	if !p.readMsg(r, w.RemoteAddr(), &a) {
		return false, nil
	}
	s.admit(&a, start)
	if s.rrl != nil && !a.tcp && !a.ck.verified {
		a.qlen = r.Len() // not before: a COOKIE option's length is computed by decoding its hex
	}
	reply, rcode, st, pre := s.serveKept(&a, p, start)
	switch st {
	case keptSent:
		_, _ = w.Write(reply) // the writer must not keep reply (write)
		s.metrics.add(a.qtype, rcode, s.metrics.now()-start)
		return true, nil
	case keptDropped:
		return true, nil
	}
	return false, pre
}

// fitted returns the size fit cuts a reply to: see fit.
func fitted(tcp, edns bool, size, limit uint16) int {
	switch {
	case tcp:
		return dns.MaxMsgSize
	case edns:
		return min(max(int(size), dns.MinMsgSize), int(limit))
	}
	return dns.MinMsgSize
}

// admit completes a, a question read at start: what its cookie says, and
// the size its reply is cut to (see fit).
func (s *Server) admit(a *wireQuestion, start time.Duration) {
	if a.cookie != nil && s.cfg.Cookies {
		s.readCookie(&a.ck, a.cookie, a.remote, s.unixSeconds(start))
	}
	a.size = fitted(a.tcp, a.edns, a.bufSize, s.udpLimit(a.ck.verified))
}

// readMsg reads r, from remote, into a, reporting whether the wire cache
// may answer it (once admitted).
func (p *packer) readMsg(r *dns.Msg, remote net.Addr, a *wireQuestion) bool {
	if r.Opcode != dns.OpcodeQuery || len(r.Question) != 1 || len(r.Answer) != 0 || len(r.Ns) != 0 || len(r.Extra) > 1 {
		return false
	}
	q := &r.Question[0]
	if q.Qclass != dns.ClassINET {
		return false
	}
	*a = wireQuestion{id: r.Id, rd: r.RecursionDesired, cd: r.CheckingDisabled, qtype: q.Qtype, remote: remote}
	_, a.tcp = remote.(*net.TCPAddr)
	if len(r.Extra) == 1 {
		opt, ok := r.Extra[0].(*dns.OPT)
		if !ok || opt.Version() != 0 {
			return false
		}
		a.edns, a.do, a.co, a.bufSize = true, opt.Do(), opt.Co(), opt.UDPSize()
		for _, o := range opt.Option {
			if c, ok := o.(*dns.EDNS0_COOKIE); ok {
				n, ok := decodeCookie(&p.cookie, c.Cookie)
				if !ok {
					return false // FORMERR, from the slow path
				}
				a.cookie = p.cookie[:n]
				break
			}
		}
	}
	// The name's wire form, and whether it needs lowercasing.
	name := q.Name
	if len(name) < 2 || name[len(name)-1] != '.' {
		return false
	}
	p.qwire = p.qwire[:0]
	upper := false
	for begin := 0; begin < len(name); {
		end := begin
		for end < len(name) && name[end] != '.' {
			c := name[end]
			if !plain(c) {
				return false
			}
			upper = upper || 'A' <= c && c <= 'Z'
			end++
		}
		if end == begin || end-begin > 63 {
			return false
		}
		p.qwire = append(p.qwire, byte(end-begin))
		p.qwire = append(p.qwire, name[begin:end]...)
		begin = end + 1
	}
	p.qwire = append(p.qwire, 0)
	if len(p.qwire) > 255 {
		return false
	}
	a.wire = p.qwire
	if !upper {
		a.lower = name // the message's own string
		return true
	}
	p.lower = p.lower[:0]
	for i := range len(name) {
		p.lower = append(p.lower, lowerByte(name[i]))
	}
	a.lower, a.fresh = p.interned(p.lower)
	return true
}

// readPacket reads the query packet b, from remote, into a, reporting
// whether the wire cache may answer it (once admitted); a.wire and
// a.cookie are views of b.
func (p *packer) readPacket(b []byte, remote net.Addr, a *wireQuestion) bool {
	if len(b) < 12+1+4 {
		return false
	}
	bits := binary.BigEndian.Uint16(b[2:])
	if bits&(1<<15) != 0 || (bits>>11)&0xF != dns.OpcodeQuery ||
		binary.BigEndian.Uint16(b[4:]) != 1 || binary.BigEndian.Uint16(b[6:]) != 0 || binary.BigEndian.Uint16(b[8:]) != 0 {
		return false
	}
	ar := binary.BigEndian.Uint16(b[10:])
	if ar > 1 {
		return false
	}
	*a = wireQuestion{id: binary.BigEndian.Uint16(b), rd: bits&(1<<8) != 0, cd: bits&(1<<4) != 0, remote: remote}
	_, a.tcp = remote.(*net.TCPAddr)
	p.lower = p.lower[:0]
	off := 12
	for {
		if off >= len(b) {
			return false
		}
		l := int(b[off])
		if l == 0 {
			break
		}
		if l > 63 || off+1+l >= len(b) { // a pointer, or cut
			return false
		}
		for _, c := range b[off+1 : off+1+l] {
			if !plain(c) {
				return false
			}
			p.lower = append(p.lower, lowerByte(c))
		}
		p.lower = append(p.lower, '.')
		off += 1 + l
	}
	off++
	if off-12 > 255 || len(p.lower) == 0 || off+4 > len(b) || binary.BigEndian.Uint16(b[off+2:]) != dns.ClassINET {
		return false
	}
	a.wire = b[12:off]
	a.qtype = binary.BigEndian.Uint16(b[off:])
	off += 4
	if ar == 1 {
		// The OPT record: the root, its type, the buffer size as class,
		// the TTL (extended rcode, version, flags), its options.
		if off+optLen > len(b) || b[off] != 0 || binary.BigEndian.Uint16(b[off+1:]) != dns.TypeOPT || b[off+6] != 0 {
			return false
		}
		a.bufSize = binary.BigEndian.Uint16(b[off+3:])
		a.edns, a.do, a.co = true, b[off+7]&0x80 != 0, b[off+7]&0x40 != 0
		end := off + optLen + int(binary.BigEndian.Uint16(b[off+9:]))
		if end > len(b) {
			return false
		}
		// Options are not answered, but miekg/dns fails to unpack some
		// malformed ones, which the slow path then answers FORMERR: only
		// those it reads whatever their content go by here (cookies, as
		// dig sends; padding).
		for o := off + optLen; o < end; {
			if o+4 > end {
				return false
			}
			code, n := binary.BigEndian.Uint16(b[o:]), int(binary.BigEndian.Uint16(b[o+2:]))
			if code != dns.EDNS0COOKIE && code != dns.EDNS0PADDING || o+4+n > end {
				return false
			}
			if code == dns.EDNS0COOKIE && a.cookie == nil { // the first (RFC 7873 5.2)
				if !validCookie(n) {
					return false // FORMERR, from the slow path
				}
				a.cookie = b[o+4 : o+4+n]
			}
			o += 4 + n
		}
		off = end
	}
	if off != len(b) {
		return false // trailing bytes: as the slow path takes them
	}
	a.lower, a.fresh = p.interned(p.lower)
	return true
}

// plain reports whether c may be in a label the wire cache reads: one
// miekg/dns writes as text without escaping.
func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// interned returns the string of name, kept from an earlier question
// when there was one (fresh false), else new.
func (p *packer) interned(name []byte) (s string, fresh bool) {
	if s, ok := p.names[string(name)]; ok {
		return s, false
	}
	return string(name), true
}

// intern keeps name, a question answered from the wire cache, for the
// next question that asks it; past maxInterned names, the others go.
func (p *packer) intern(name string) {
	if p.names == nil || len(p.names) >= maxInterned {
		p.names = make(map[string]string, maxInterned)
	}
	p.names[name] = name
}

// context returns the query context of a question's Source calls, due
// at deadline: p's own, unless a Source waited on it
// (queryContext.reusable).
func (p *packer) context(deadline time.Time) *queryContext {
	if p.qctx == nil {
		p.qctx = &queryContext{deadline: deadline}
	} else {
		p.qctx.renew(deadline)
	}
	return p.qctx
}

// release ends the context of context's question.
func (p *packer) release() {
	p.qctx.cancel()
	if !p.qctx.reusable() {
		p.qctx = nil
	}
}
