package resolver

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net"
	"unsafe"

	"github.com/miekg/dns"
)

// Replies are packed here rather than by dns.Msg.Pack, which allocates a
// buffer the size of the uncompressed message and a compression map for
// every reply; growing that map was most of what a cached answer cost.
// A packer keeps its buffer between replies, and the name suffixes in a
// short list (packname.go). It writes exactly the bytes Msg.Pack would
// (the same header bits, the same names compressed with the same
// pointers) for the record types the zones build and for an OPT record
// without options or with a COOKIE one; any other message is left to Msg.Pack, which then
// packs it or fails as it always did. pack_test.go checks the equality
// and fuzzes it.

// errNotPacked reports a message pack leaves to dns.Msg.Pack: a record of
// a type it does not pack, a value whose wire form it does not write
// (a TXT escape, an IP of unusual length), or no room in its buffer.
var errNotPacked = errors.New("resolver: message left to miekg/dns")

// maxCompressionEntries bounds the compression map kept for the next
// reply: clearing a map costs its capacity, so one grown by a huge TCP
// answer is dropped rather than cleared for every small reply after it.
const maxCompressionEntries = 256

// packer is the memory a reply is packed into, reused between replies
// (Server.packers pools them). It is used by one goroutine at a time.
type packer struct {
	buf []byte
	// The name suffixes written so far and where, for compression
	// pointers: in list, or once inMap in comp (packname.go).
	list  []suffix
	comp  map[string]int
	inMap bool

	// What the wire cache (wirecache.go, query.go) reads a question
	// into, kept between questions like the buffer: the name in wire
	// form and lowercased, the records of a reply being shuffled, the
	// names read before (interned: a name read from a packet becomes a
	// string without allocating), and a query context no Source waited
	// on.
	qwire, lower, recs []byte
	names              map[string]string
	qctx               *queryContext
	cookie             [maxCookieLen]byte // a COOKIE option's data, decoded
}

// getPacker returns a packer from the pool, or a new one.
func (s *Server) getPacker() *packer {
	if p, ok := s.packers.Get().(*packer); ok {
		return p
	}
	return new(packer)
}

// putPacker returns p to the pool.
func (s *Server) putPacker(p *packer) {
	p.reset()
	s.packers.Put(p)
}

// reset forgets the names of the last message packed, keeping the room
// they took (and not the records they belong to alive).
func (p *packer) reset() {
	clear(p.list)
	p.list = p.list[:0]
	if p.inMap {
		if len(p.comp) > maxCompressionEntries {
			p.comp = nil
		} else {
			clear(p.comp)
		}
		p.inMap = false
	}
}

// pack packs m as m.Pack would with m.Compress set, into p's buffer,
// grown to hold size bytes. The result is valid until p packs again.
func (p *packer) pack(m *dns.Msg, size int) ([]byte, error) {
	p.reset()
	if m.Rcode < 0 || m.Rcode > 0xFFF {
		return nil, errNotPacked
	}
	// As Msg.Pack does: the OPT record carries the rcode's upper bits.
	if opt := m.IsEdns0(); opt != nil {
		opt.SetExtendedRcode(uint16(m.Rcode))
	} else if m.Rcode > 0xF {
		return nil, errNotPacked
	}
	if n := size + 1; len(p.buf) < n {
		p.buf = make([]byte, n)
	}
	msg := p.buf
	if len(msg) < 12 {
		return nil, errNotPacked
	}
	bits := uint16(m.Opcode)<<11 | uint16(m.Rcode&0xF)
	bits |= flag(m.Response, 1<<15) | flag(m.Authoritative, 1<<10) | flag(m.Truncated, 1<<9) |
		flag(m.RecursionDesired, 1<<8) | flag(m.RecursionAvailable, 1<<7) | flag(m.Zero, 1<<6) |
		flag(m.AuthenticatedData, 1<<5) | flag(m.CheckingDisabled, 1<<4)
	binary.BigEndian.PutUint16(msg[0:], m.Id)
	binary.BigEndian.PutUint16(msg[2:], bits)
	binary.BigEndian.PutUint16(msg[4:], uint16(len(m.Question)))
	binary.BigEndian.PutUint16(msg[6:], uint16(len(m.Answer)))
	binary.BigEndian.PutUint16(msg[8:], uint16(len(m.Ns)))
	binary.BigEndian.PutUint16(msg[10:], uint16(len(m.Extra)))
	off := 12
	var err error
	for _, q := range m.Question {
		if off, err = p.packName(q.Name, msg, off, true); err != nil {
			return nil, errNotPacked
		}
		if off+4 > len(msg) {
			return nil, errNotPacked
		}
		binary.BigEndian.PutUint16(msg[off:], q.Qtype)
		binary.BigEndian.PutUint16(msg[off+2:], q.Qclass)
		off += 4
	}
	for _, section := range [...][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range section {
			if off, err = p.packRR(rr, msg, off); err != nil {
				return nil, errNotPacked
			}
		}
	}
	return msg[:off], nil
}

// flag returns bit if set, else 0.
func flag(set bool, bit uint16) uint16 {
	if set {
		return bit
	}
	return 0
}

// packRR packs rr into msg at off, as miekg/dns does in a message, and
// returns the offset after it.
func (p *packer) packRR(rr dns.RR, msg []byte, off int) (int, error) {
	if rr == nil {
		return 0, errNotPacked
	}
	h := rr.Header()
	off, err := p.packName(h.Name, msg, off, true)
	if err != nil {
		return 0, err
	}
	if off+10 > len(msg) {
		return 0, errNotPacked
	}
	binary.BigEndian.PutUint16(msg[off:], h.Rrtype)
	binary.BigEndian.PutUint16(msg[off+2:], h.Class)
	binary.BigEndian.PutUint32(msg[off+4:], h.Ttl)
	rdlen := off + 8 // where RDLENGTH goes, once the data is packed
	start := off + 10
	off, err = p.packData(rr, msg, start)
	if err != nil {
		return 0, err
	}
	n := off - start
	if n > 0xFFFF {
		return 0, errNotPacked
	}
	binary.BigEndian.PutUint16(msg[rdlen:], uint16(n))
	return off, nil
}

// packData packs the data of rr into msg at off. Which names are
// compressed follows miekg/dns (RFC 3597 section 4): NS, PTR, CNAME and
// the SOA's names are; an SRV target is not, but later names may point
// into it.
func (p *packer) packData(rr dns.RR, msg []byte, off int) (int, error) {
	switch rr := rr.(type) {
	case *dns.A:
		return putBytes(msg, off, rr.A.To4(), len(rr.A) == net.IPv4len || len(rr.A) == net.IPv6len)
	case *dns.AAAA:
		return putBytes(msg, off, rr.AAAA, len(rr.AAAA) == net.IPv6len)
	case *dns.SRV:
		if off+6 > len(msg) {
			return 0, errNotPacked
		}
		binary.BigEndian.PutUint16(msg[off:], rr.Priority)
		binary.BigEndian.PutUint16(msg[off+2:], rr.Weight)
		binary.BigEndian.PutUint16(msg[off+4:], rr.Port)
		return p.packName(rr.Target, msg, off+6, false)
	case *dns.NS:
		return p.packName(rr.Ns, msg, off, true)
	case *dns.PTR:
		return p.packName(rr.Ptr, msg, off, true)
	case *dns.CNAME:
		return p.packName(rr.Target, msg, off, true)
	case *dns.SOA:
		off, err := p.packName(rr.Ns, msg, off, true)
		if err != nil {
			return 0, err
		}
		if off, err = p.packName(rr.Mbox, msg, off, true); err != nil {
			return 0, err
		}
		if off+20 > len(msg) {
			return 0, errNotPacked
		}
		for i, v := range [...]uint32{rr.Serial, rr.Refresh, rr.Retry, rr.Expire, rr.Minttl} {
			binary.BigEndian.PutUint32(msg[off+4*i:], v)
		}
		return off + 20, nil
	case *dns.TXT:
		return packTXT(rr.Txt, msg, off)
	case *dns.RRSIG:
		return p.packRRSIG(rr, msg, off)
	case *dns.NSEC:
		off, err := p.packName(rr.NextDomain, msg, off, false)
		if err != nil {
			return 0, err
		}
		return packTypeBitmap(rr.TypeBitMap, msg, off)
	case *dns.OPT:
		for _, o := range rr.Option {
			c, ok := o.(*dns.EDNS0_COOKIE) // the one option a reply carries (cookie.go)
			if !ok || off+4+len(c.Cookie)/2 > len(msg) {
				return 0, errNotPacked
			}
			var buf [maxCookieLen]byte
			n, ok := decodeCookie(&buf, c.Cookie)
			if !ok {
				return 0, errNotPacked
			}
			binary.BigEndian.PutUint16(msg[off:], dns.EDNS0COOKIE)
			binary.BigEndian.PutUint16(msg[off+2:], uint16(n))
			off += 4 + copy(msg[off+4:], buf[:n])
		}
		return off, nil
	}
	return 0, errNotPacked
}

// packRRSIG packs a signature (dnssec.go): its signer name uncompressed,
// as RFC 4034 3.1.7 requires and miekg/dns does (later names may point
// into it all the same), and its signature decoded from base64 straight
// into msg.
func (p *packer) packRRSIG(rr *dns.RRSIG, msg []byte, off int) (int, error) {
	if off+18 > len(msg) {
		return 0, errNotPacked
	}
	binary.BigEndian.PutUint16(msg[off:], rr.TypeCovered)
	msg[off+2], msg[off+3] = rr.Algorithm, rr.Labels
	binary.BigEndian.PutUint32(msg[off+4:], rr.OrigTtl)
	binary.BigEndian.PutUint32(msg[off+8:], rr.Expiration)
	binary.BigEndian.PutUint32(msg[off+12:], rr.Inception)
	binary.BigEndian.PutUint16(msg[off+16:], rr.KeyTag)
	off, err := p.packName(rr.SignerName, msg, off+18, false)
	if err != nil {
		return 0, err
	}
	sig := rr.Signature
	if base64.StdEncoding.DecodedLen(len(sig)) > len(msg)-off {
		return 0, errNotPacked
	}
	// Decode only reads its source: viewing the string's bytes in place
	// saves copying the signature for every reply.
	n, err := base64.StdEncoding.Decode(msg[off:], unsafe.Slice(unsafe.StringData(sig), len(sig)))
	if err != nil {
		return 0, errNotPacked
	}
	return off + n, nil
}

// packTypeBitmap packs an NSEC type bitmap (RFC 4034 4.1.2): a window
// block per 256 types, each as long as its highest type needs. types
// must be in increasing order, as the signer makes them; any other list
// is left to miekg/dns.
func packTypeBitmap(types []uint16, msg []byte, off int) (int, error) {
	for i := 0; i < len(types); {
		window := types[i] >> 8
		var bits [32]byte
		n := 0
		for ; i < len(types) && types[i]>>8 == window; i++ {
			if i > 0 && types[i] <= types[i-1] {
				return 0, errNotPacked
			}
			low := types[i] & 0xFF
			bits[low/8] |= 0x80 >> (low % 8)
			n = int(low/8) + 1
		}
		if off+2+n > len(msg) {
			return 0, errNotPacked
		}
		msg[off], msg[off+1] = byte(window), byte(n)
		off += 2 + copy(msg[off+2:], bits[:n])
	}
	return off, nil
}

// putBytes copies b into msg at off when ok, the check that b is a value
// whose wire form is b itself.
func putBytes(msg []byte, off int, b []byte, ok bool) (int, error) {
	if !ok || b == nil || off+len(b) > len(msg) {
		return 0, errNotPacked
	}
	return off + copy(msg[off:], b), nil
}

// packTXT packs TXT strings holding no backslash, which are their own
// wire form; miekg/dns reads escapes in them, which are left to it, as is
// an empty list (which it packs as no data at all).
func packTXT(txt []string, msg []byte, off int) (int, error) {
	if len(txt) == 0 {
		return 0, errNotPacked
	}
	for _, s := range txt {
		if len(s) > 255 || off+1+len(s) > len(msg) {
			return 0, errNotPacked
		}
		for i := range len(s) {
			if s[i] == '\\' {
				return 0, errNotPacked
			}
		}
		msg[off] = byte(len(s))
		off += 1 + copy(msg[off+1:], s)
	}
	return off, nil
}
