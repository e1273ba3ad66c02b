package resolver

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// Replies kept in wire form. A service question answered from a set its
// Source keeps returning (a cache hit) is asked again and again, and its
// reply differs from one question to the next only in its ID, its RD and
// CD bits, the spelling of its name (0x20) and the order of its answers.
// So beside each memoized answer (memo.go) the packed reply is kept, one
// per shape of question that changes its bytes (shape), and a question
// costs a copy and a few patches: no message is built, nothing is packed,
// and nothing is allocated.
//
// The bytes are made by the slow path itself (reply, then pack), with
// the answers in a chosen order instead of shuffled, so they are what the
// slow path writes for that order; wirecache_test.go checks it byte for
// byte. Answers are reordered two ways:
//
//   - A and AAAA records owned by the question's name are all the same
//     size and hold no name another record could point into: they are
//     shuffled in place, a random permutation (a random subset when not
//     all fit, or an answer limit cuts them), as the slow path shuffles.
//   - Any other answer section (SRV, whose targets compress against each
//     other; a signed one, whose RRSIGs' signer names may be pointed
//     into) is kept packed in up to maxRotations rotations, one chosen
//     per question. Every record comes first as often as any other, but
//     a section larger than that keeps a few orders only, so it must fit
//     whole: one that is cut (by size or limits) would leave the same
//     records out of every reply, and takes the slow path.
//
// The patches: the ID; RD and CD, which miekg's SetReply copies from the
// query (the opcode is QUERY, or the slow path answers); and the question
// name, which the reply echoes as asked. Answer records owned by the name
// point to it (offset 12), so they follow. Other names compress against
// the suffixes of the name only where the spelling matches exactly, so
// the layout depends on which suffixes are lowercase: the class of a
// shape is the number of leading labels that hold an uppercase letter,
// and askers of one class share bytes (when every other name of the
// reply is lowercase, as the zones build them; else only a lowercase
// question is served from the cache).
//
// Signed replies carry signatures that are renewed: they are kept for an
// eighth of the signature validity (sigCache renews at half of it,
// sectionCache keeps a signed section a quarter), and dropped with a new
// key. Everything else (other kinds of names, ANY, stale or unknown sets,
// questions the wire cache cannot read) takes the slow path.

// maxRotations is how many orders of an answer section that cannot be
// shuffled in place are kept: each is a packed reply.
const maxRotations = 8

// maxForms bounds the shapes kept per memoized answer: UDP with and
// without EDNS, a few buffer sizes, DO, TCP, a couple of 0x20 classes.
// Past it the slow path answers the rest.
const maxForms = 16

// maxFormBytes bounds the replies kept for one shape when rotated: a
// large answer asked over TCP would otherwise keep maxRotations copies of
// up to 64 KiB. Past it the slow path answers.
const maxFormBytes = 64 << 10

// maxInterned bounds the names a packer keeps (packer.names).
const maxInterned = 256

// optLen is the length of the reply's OPT record: the root, the header,
// no options.
const optLen = 11

// wireQuestion is what the wire cache reads of a query (wirequery.go).
type wireQuestion struct {
	id     uint16
	rd, cd bool
	qtype  uint16
	lower  string // the question's name lowercased, fully qualified; not a view of a buffer
	wire   []byte // the name as asked, in wire form
	fresh  bool   // lower was allocated for this question: intern it once served
	edns   bool
	// bufSize is the buffer size of the query's OPT record, size the
	// size fit cuts the reply to (set by admit).
	bufSize uint16
	qlen    int // the query's length in wire form, over UDP (for RRL; set by the caller of admit)
	size    int
	do, co  bool
	tcp     bool
	remote  net.Addr
	// cookie is the data of the query's first COOKIE option, nil when
	// none (a view, as wire is); ck what it says (admit).
	cookie []byte
	ck     queryCookie
}

// shape is what, besides the records, decides a reply's bytes.
type shape struct {
	size   int
	tcp    bool
	edns   bool
	do, co bool
	cookie bool // the reply carries a COOKIE option, patched in by fill
	class  int
}

func (a *wireQuestion) shape() shape {
	return shape{size: a.size, tcp: a.tcp, edns: a.edns, do: a.do, co: a.co, cookie: a.ck.present, class: caseClass(a.wire)}
}

// caseClass returns the number of leading labels of the wire name n up to
// the last one holding an uppercase letter: 0 for a lowercase name.
func caseClass(n []byte) int {
	class, label := 0, 0
	for off := 0; off < len(n) && n[off] != 0; label++ {
		l := int(n[off])
		for _, c := range n[off+1 : off+1+l] {
			if 'A' <= c && c <= 'Z' {
				class = label + 1
				break
			}
		}
		off += 1 + l
	}
	return class
}

// prefetched is what the wire cache has looked up of a question it then
// leaves to the slow path: the Source's answer, not to be asked twice.
// When the wire cache builds a reply to keep, build is set and the answer
// section is put in perm's order (perm[i] is the index of the record
// answered i-th; nil keeps the section's order), and reordered records
// the section's length.
type prefetched struct {
	set     *Instances
	err     error
	build   bool
	perm    []int
	section []dns.RR
	// sized is set for a form's request, whose buffer size is its
	// shape's, cut already for a client that did not prove its address
	// (admit): the reply is fitted to it as to a proved client's.
	sized bool
}

// reordered returns rrs in pre's order.
func (pre *prefetched) reordered(rrs []dns.RR) []dns.RR {
	pre.section = rrs
	out := make([]dns.RR, len(rrs))
	copy(out, rrs)
	if len(pre.perm) == len(rrs) {
		for i, j := range pre.perm {
			out[i] = rrs[j]
		}
	}
	return out
}

// rotation returns the permutation of n records starting at off.
func rotation(n, off int) []int {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = (i + off) % n
	}
	return perm
}

// wireCache keeps the replies packed from one memoized answer, one
// wireForm per shape. Readers take no lock: the list is replaced whole
// under mu, as answerMemo's is.
type wireCache struct {
	mu    sync.Mutex
	forms atomic.Pointer[[]*wireForm]
}

// wireForm is the reply of one shape, packed. It is immutable once kept.
type wireForm struct {
	shape   shape
	signer  *signer       // the signer of a DO shape's signatures
	expires time.Duration // since the metrics epoch, for a signed form; 0 never
	slow    bool          // the slow path answers this shape
	rcode   int
	qend    int      // the end of the question section
	opt     int      // the offset of the OPT record, 0 when none
	replies [][]byte // one per rotation; one when not reordered or shuffled in place
	// A section of fixed-size records shuffled in place: n records of
	// rsize bytes from aoff, of which kept fit; recs holds all n.
	fixed                bool
	aoff, rsize, kept, n int
	recs                 []byte
}

// get returns the form of sh, unless none is kept, or its signatures
// are from another signer or due for renewal at now.
func (c *wireCache) get(sh shape, sg *signer, now time.Duration) *wireForm {
	l := c.forms.Load()
	if l == nil {
		return nil
	}
	for _, f := range *l {
		if f.shape == sh {
			if sh.do && (f.signer != sg || f.expires != 0 && now >= f.expires) {
				return nil
			}
			return f
		}
	}
	return nil
}

// put keeps f, in place of the form of its shape if there is one, unless
// maxForms others are kept.
func (c *wireCache) put(f *wireForm) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old []*wireForm
	if l := c.forms.Load(); l != nil {
		old = *l
	}
	l := make([]*wireForm, 0, len(old)+1)
	replaced := false
	for _, o := range old {
		if o.shape == f.shape {
			o, replaced = f, true
		}
		l = append(l, o)
	}
	if !replaced {
		if len(old) >= maxForms {
			return
		}
		l = append(l, f)
	}
	c.forms.Store(&l)
}

// What became of a question offered to the wire cache.
const (
	keptNot     = iota // left to the slow path
	keptSent           // answered: the reply is to be written
	keptDropped        // over the rate of RRL: no reply
)

// serveKept answers a from the wire cache when it can: it returns the
// reply (in p's buffer) and its rcode with keptSent, or keptDropped, or
// keptNot with what it looked up for the slow path to use (nil when it
// asked the Source nothing).
func (s *Server) serveKept(a *wireQuestion, p *packer, start time.Duration) ([]byte, int, int, *prefetched) {
	if a.qtype == dns.TypeANY {
		return nil, 0, keptNot, nil // cut to one record over UDP (limits.go)
	}
	z, q := s.parse(a.lower)
	if q.Kind != zones.KindService {
		return nil, 0, keptNot, nil
	}
	// The deadline from the question's start, as newQueryContext's is
	// from now, without reading the clock again.
	ctx := p.context(s.metrics.epoch.Add(start + s.cfg.QueryTimeout))
	set, err := s.src.Instances(ctx, q.Datacenter, q.Name, q.Tag)
	p.release()
	if err != nil || set == nil || set.Stale {
		return nil, 0, keptNot, &prefetched{set: set, err: err}
	}
	e := set.memo.entry(z, a.qtype, q.Qname)
	if e == nil {
		return nil, 0, keptNot, &prefetched{set: set} // the slow path memoizes it
	}
	sh, sg := a.shape(), s.signer.Load()
	f := e.wire.get(sh, sg, start)
	if f == nil {
		f = s.buildForm(a, set, sh, sg, start)
		e.wire.put(f)
	}
	if f.slow {
		return nil, 0, keptNot, &prefetched{set: set}
	}
	b := f.fill(a, p)
	if a.fresh {
		p.intern(a.lower)
	}
	if s.rrl != nil && !a.tcp && !a.ck.verified && s.rrl.amplifies(a.qlen, len(b)) { // as serveMsg charges the slow path's replies
		q := dns.Question{Name: a.lower, Qtype: a.qtype, Qclass: dns.ClassINET}
		switch s.rrl.charge(a.remote, f.rcode, &q, start) {
		case rrlDrop:
			s.metrics.rrlDropped.Add(1)
			return nil, f.rcode, keptDropped, nil
		case rrlSlip:
			s.metrics.rrlSlipped.Add(1)
			b = f.slip(b)
		}
	}
	return b, f.rcode, keptSent, nil
}

// fill copies a reply of f into p's buffer, answers shuffled or a
// rotation chosen, and patches it for a.
func (f *wireForm) fill(a *wireQuestion, p *packer) []byte {
	src := f.replies[0]
	if len(f.replies) > 1 {
		src = f.replies[rand.IntN(len(f.replies))]
	}
	if len(p.buf) < len(src) {
		p.buf = make([]byte, len(src))
	}
	b := p.buf[:len(src)]
	copy(b, src)
	if f.fixed {
		f.shuffle(b, p)
	}
	binary.BigEndian.PutUint16(b, a.id)
	if a.rd {
		b[2] |= 0x01
	}
	if a.cd {
		b[3] |= 0x10
	}
	copy(b[12:], a.wire)
	if f.shape.cookie { // the last option of the OPT record, the last record
		copy(b[len(b)-cookieLen:], a.ck.reply[:])
	}
	return b
}

// shuffle puts into b's answer section a random choice of f.kept of the
// f.n records, in random order: the slow path's shuffle, then cut.
func (f *wireForm) shuffle(b []byte, p *packer) {
	rs := f.rsize
	recs := b[f.aoff : f.aoff+f.kept*rs]
	if f.kept < f.n {
		p.recs = append(p.recs[:0], f.recs...)
		recs = p.recs
	}
	for i := range min(f.kept, f.n-1) {
		j := i + rand.IntN(f.n-i)
		if j != i {
			x, y := recs[i*rs:(i+1)*rs], recs[j*rs:(j+1)*rs]
			for k := range x {
				x[k], y[k] = y[k], x[k]
			}
		}
	}
	if f.kept < f.n {
		copy(b[f.aoff:], recs[:f.kept*rs])
	}
}

// slip makes b, a reply of f, the truncated reply RRL sends instead of a
// limited one, as slip does: TC set, the question and the OPT record (the
// last record) kept, no other record.
func (f *wireForm) slip(b []byte) []byte {
	b[2] |= 0x02
	binary.BigEndian.PutUint16(b[6:], 0)
	binary.BigEndian.PutUint16(b[8:], 0)
	if f.opt == 0 {
		binary.BigEndian.PutUint16(b[10:], 0)
		return b[:f.qend]
	}
	binary.BigEndian.PutUint16(b[10:], 1)
	n := copy(b[f.qend:], b[f.opt:])
	return b[:f.qend+n]
}

// addrWriter is the dns.ResponseWriter a form is built with: only its
// remote address is asked for (fit, the answer limits), which says the
// transport.
type addrWriter struct {
	dns.ResponseWriter
	remote net.Addr
}

func (w addrWriter) RemoteAddr() net.Addr { return w.remote }

// formUDPAddr is the client address a UDP form is built for.
var formUDPAddr = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}

// buildForm packs the replies of shape sh to a's question, answered from
// set, with the slow path. A form the wire cache cannot serve is marked
// slow, so that later questions of its shape go to the slow path at once.
func (s *Server) buildForm(a *wireQuestion, set *Instances, sh shape, sg *signer, now time.Duration) *wireForm {
	f := &wireForm{shape: sh, signer: sg, slow: true}
	if sh.do && sg != nil {
		f.expires = now + sg.validity/8
	}
	spelt := presentation(a.wire)
	req := &dns.Msg{Question: []dns.Question{{Name: spelt, Qtype: a.qtype, Qclass: dns.ClassINET}}}
	if sh.edns {
		opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		opt.SetUDPSize(uint16(min(sh.size, dns.MaxMsgSize)))
		opt.SetDo(sh.do)
		if sh.co {
			opt.SetCo()
		}
		if sh.cookie { // any client cookie: fill patches the reply's in
			opt.Option = []dns.EDNS0{&dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0000000000000000"}}
		}
		req.Extra = []dns.RR{opt}
	}
	w := addrWriter{remote: formUDPAddr}
	if sh.tcp {
		w.remote = askAddr
	}
	pack := func(perm []int) ([]byte, *prefetched, bool) {
		pre := &prefetched{set: set, build: true, perm: perm, sized: true}
		m, size, _ := s.reply(w, req, pre)
		if !m.Authoritative || m.Rcode != dns.RcodeSuccess && m.Rcode != dns.RcodeNameError ||
			sh.class > 0 && otherNamesUpper(m, spelt) {
			return nil, nil, false
		}
		b, err := new(packer).pack(m, size)
		return bytes.Clone(b), pre, err == nil && len(b) >= 12
	}
	first, pre, ok := pack(nil)
	if !ok {
		return f
	}
	f.rcode, f.qend = int(first[3]&0xF), 12+len(a.wire)+4
	if sh.edns {
		size := optLen
		if sh.cookie {
			size += cookieOptionLen
		}
		f.opt = len(first) - size
		if f.opt < f.qend || first[f.opt] != 0 || binary.BigEndian.Uint16(first[f.opt+1:]) != dns.TypeOPT ||
			int(binary.BigEndian.Uint16(first[f.opt+9:])) != size-optLen {
			return f
		}
	}
	f.replies = [][]byte{first}
	n := len(pre.section)
	switch {
	case n < 2: // not reordered (Ordered, or one record)
	case f.fixedRecords(pre.section, first):
	default:
		k := min(n, maxRotations)
		total := len(first)
		for i := 1; i < k; i++ {
			b, _, ok := pack(rotation(n, i*n/k))
			if total += len(b); !ok || total > maxFormBytes {
				return f
			}
			f.replies = append(f.replies, b)
		}
		if n > k {
			for _, b := range f.replies {
				if int(binary.BigEndian.Uint16(b[6:])) < n {
					return f // cut: the same records would always be left out
				}
			}
		}
	}
	f.slow = false
	return f
}

// fixedRecords sets f up to shuffle in place the answer section rrs (in
// the order packed in first) when it can: A or AAAA records only, all
// owned by the question's name (packed as a pointer to it) and of one
// size, packed in first as recs packs them. Those hold no name that
// another record could point into, so any order packs to these bytes
// reordered.
func (f *wireForm) fixedRecords(rrs []dns.RR, first []byte) bool {
	owner := rrs[0].Header().Name
	var recs []byte
	rsize := 0
	for _, rr := range rrs {
		h := rr.Header()
		var data []byte
		switch rr := rr.(type) {
		case *dns.A:
			data = rr.A.To4()
		case *dns.AAAA:
			if len(rr.AAAA) == net.IPv6len {
				data = rr.AAAA
			}
		}
		size := 12 + len(data)
		if data == nil || h.Name != owner || rsize != 0 && size != rsize {
			return false
		}
		rsize = size
		recs = append(recs, 0xC0, 12, byte(h.Rrtype>>8), byte(h.Rrtype), byte(h.Class>>8), byte(h.Class))
		recs = binary.BigEndian.AppendUint32(recs, h.Ttl)
		recs = binary.BigEndian.AppendUint16(recs, uint16(len(data)))
		recs = append(recs, data...)
	}
	kept := int(binary.BigEndian.Uint16(first[6:]))
	if f.qend+kept*rsize > len(first) || !bytes.Equal(first[f.qend:f.qend+kept*rsize], recs[:kept*rsize]) {
		return false
	}
	f.fixed, f.aoff, f.rsize, f.kept, f.n, f.recs = true, f.qend, rsize, kept, len(rrs), recs
	return true
}

// otherNamesUpper reports whether a name of m other than the question's
// (spelt) holds an uppercase letter, or m holds a record whose names it
// does not know. Such a name could compress against the question's
// spelling, which then decides the layout: not a class.
func otherNamesUpper(m *dns.Msg, spelt string) bool {
	upper := func(n string) bool {
		for i := range len(n) {
			if 'A' <= n[i] && n[i] <= 'Z' {
				return true
			}
		}
		return false
	}
	for _, section := range [...][]dns.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range section {
			if n := rr.Header().Name; n != spelt && upper(n) {
				return true
			}
			var names []string
			switch rr := rr.(type) {
			case *dns.A, *dns.AAAA, *dns.TXT, *dns.OPT:
			case *dns.SRV:
				names = []string{rr.Target}
			case *dns.CNAME:
				names = []string{rr.Target}
			case *dns.NS:
				names = []string{rr.Ns}
			case *dns.SOA:
				names = []string{rr.Ns, rr.Mbox}
			case *dns.RRSIG:
				names = []string{rr.SignerName}
			case *dns.NSEC:
				names = []string{rr.NextDomain}
			default:
				return true
			}
			for _, n := range names {
				if upper(n) {
					return true
				}
			}
		}
	}
	return false
}

// presentation returns the wire name n, of plain labels (wirequery.go),
// as text.
func presentation(n []byte) string {
	var b []byte
	for off := 0; off < len(n) && n[off] != 0; off += 1 + int(n[off]) {
		b = append(b, n[off+1:off+1+int(n[off])]...)
		b = append(b, '.')
	}
	if len(b) == 0 {
		return "."
	}
	return string(b)
}
