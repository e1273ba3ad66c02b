package resolver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/miekg/dns"
)

// ErrBadWireQuery is wrapped by ServeWire's error for a query that is not
// a DNS message (DNS over HTTPS answers it 400).
var ErrBadWireQuery = errors.New("not a DNS query")

// ServeWire answers one query in wire format, as DNS over HTTPS (RFC
// 8484) carries it: through the same handler, cache and rules as the
// listeners, as a TCP query from remote is answered. Like TCP, the reply
// is not cut to a UDP size, and is never rate-limited: RRL guards against
// replies sent to a spoofed source address, and the client of an HTTPS
// request has completed a TCP and TLS handshake, so its address is not
// spoofed. maxAge is how long the reply may be cached by HTTP (RFC 8484
// 5.1): the smallest TTL of its answer section, or without answers that
// of the SOA in its authority section (its TTL or MINIMUM, the smaller,
// RFC 2308), else 0. The error, wrapping ErrBadWireQuery, says query is
// not a DNS query message; a query the handler refuses (FORMERR, NOTIMP,
// ...) is a reply. remote may be nil. It is safe to call concurrently and
// counts in the DNS metrics like any question.
func (s *Server) ServeWire(query []byte, remote net.Addr) (reply []byte, maxAge uint32, err error) {
	q := new(dns.Msg)
	if err := q.Unpack(query); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrBadWireQuery, err)
	}
	if q.Response {
		return nil, 0, fmt.Errorf("%w: the message is a response (QR set)", ErrBadWireQuery)
	}
	tcp, ok := remote.(*net.TCPAddr)
	if !ok || tcp == nil {
		tcp = askAddr // treated as TCP whatever the caller's address
	}
	w := &wireWriter{remote: tcp}
	s.ServeDNS(w, q)
	if w.reply == nil {
		// The handler always replies to a query; should it not, the
		// client gets SERVFAIL rather than nothing.
		m := new(dns.Msg)
		m.SetRcode(q, dns.RcodeServerFailure)
		if w.reply, err = m.Pack(); err != nil {
			return nil, 0, fmt.Errorf("pack SERVFAIL: %w", err)
		}
	}
	return w.reply, minTTL(w.reply), nil
}

// wireWriter is the dns.ResponseWriter of ServeWire: it keeps the reply's
// wire form. Its addresses are TCP ones, so that the reply is neither
// fitted to a UDP size nor rate-limited.
type wireWriter struct {
	remote *net.TCPAddr
	reply  []byte
}

func (w *wireWriter) LocalAddr() net.Addr  { return askAddr }
func (w *wireWriter) RemoteAddr() net.Addr { return w.remote }
func (w *wireWriter) Network() string      { return "tcp" }

func (w *wireWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return fmt.Errorf("pack the reply: %w", err)
	}
	w.reply = b
	return nil
}

// Write keeps a copy of b: the handler packs into pooled buffers.
func (w *wireWriter) Write(b []byte) (int, error) {
	w.reply = append([]byte(nil), b...)
	return len(b), nil
}

func (w *wireWriter) Close() error        { return nil }
func (w *wireWriter) TsigStatus() error   { return nil }
func (w *wireWriter) TsigTimersOnly(bool) {}
func (w *wireWriter) Hijack()             {}

// minTTL returns the freshness of a packed reply for HTTP caches (RFC 8484
// 5.1): the smallest TTL of its answer records; without answers, the
// smaller of the TTL and MINIMUM of an SOA in its authority section; else,
// or for a message it cannot walk, 0. It walks the wire form without
// unpacking it.
func minTTL(msg []byte) uint32 {
	if len(msg) < 12 {
		return 0
	}
	qd, an, ns := binary.BigEndian.Uint16(msg[4:]), binary.BigEndian.Uint16(msg[6:]), binary.BigEndian.Uint16(msg[8:])
	off := 12
	for range qd {
		if off = skipName(msg, off); off < 0 || off+4 > len(msg) {
			return 0
		}
		off += 4 // type, class
	}
	// rr walks the record at off: its type, TTL, rdata offset and the
	// offset after it (-1 when the message is cut).
	rr := func(off int) (typ uint16, ttl uint32, rdata, next int) {
		if off = skipName(msg, off); off < 0 || off+10 > len(msg) {
			return 0, 0, 0, -1
		}
		typ, ttl = binary.BigEndian.Uint16(msg[off:]), binary.BigEndian.Uint32(msg[off+4:])
		rdata = off + 10
		next = rdata + int(binary.BigEndian.Uint16(msg[off+8:]))
		if next > len(msg) {
			return 0, 0, 0, -1
		}
		return typ, ttl, rdata, next
	}
	if an > 0 {
		least := ^uint32(0)
		for range an {
			typ, ttl, _, next := rr(off)
			if next < 0 {
				return 0
			}
			if typ != dns.TypeOPT {
				least = min(least, ttl)
			}
			off = next
		}
		return least
	}
	for range ns {
		typ, ttl, rdata, next := rr(off)
		if next < 0 {
			return 0
		}
		if typ == dns.TypeSOA {
			// MNAME, RNAME, then SERIAL, REFRESH, RETRY, EXPIRE, MINIMUM.
			p := skipName(msg, rdata)
			if p >= 0 {
				p = skipName(msg, p)
			}
			if p < 0 || p+20 > next {
				return 0
			}
			return min(ttl, binary.BigEndian.Uint32(msg[p+16:]))
		}
		off = next
	}
	return 0
}

// skipName returns the offset after the (possibly compressed) name at
// off, or -1 when the message ends first.
func skipName(msg []byte, off int) int {
	for {
		if off >= len(msg) {
			return -1
		}
		switch l := int(msg[off]); {
		case l == 0:
			return off + 1
		case l&0xC0 == 0xC0: // a pointer ends the name
			if off+2 > len(msg) {
				return -1
			}
			return off + 2
		case l&0xC0 != 0: // reserved label types
			return -1
		default:
			off += 1 + l
		}
	}
}
