package resolver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// DNSSEC online signing. Every agent answers its zones from its own cache,
// so every agent signs: the key is the datacenter's (its servers hold it,
// agents fetch it) and answers are signed as they are built. A signature
// is made once per RRset and kept (sigCache) until it is half way to its
// expiry, so a repeated question costs a map lookup, not an ECDSA
// signature. Denials are compact ("black lies", RFC 9824): an NSEC record
// owned by the question's name whose next name is the name's immediate
// successor, \000.<qname>, so it covers nothing else, cannot be used to
// walk the zone, and is signed as cheaply as any answer.

// AlgorithmECDSAP256 is the one DNSSEC algorithm cairn signs with (13,
// ECDSA Curve P-256 with SHA-256, RFC 6605): small keys and signatures,
// fast to sign, and validated by every current resolver.
const AlgorithmECDSAP256 = dns.ECDSAP256SHA256

// dnskeyFlags marks the key as a zone key and a secure entry point
// (257): one key signs both the DNSKEY set and the zone's data (a
// combined signing key), and it is the key a DS record or trust anchor
// names.
const dnskeyFlags = dns.ZONE | dns.SEP

// inceptionSkew backdates signatures so that a validator whose clock is
// behind ours still accepts them (RFC 6781 4.1.2 suggests about an hour).
const inceptionSkew = time.Hour

// maxSignatures bounds the signatures kept. Denials of random names each
// take one (a name that does not exist gets its own NSEC); past the bound
// the whole cache is dropped, which costs a signature per RRset asked
// again, rather than tracking use.
const maxSignatures = 10000

// DNSSECConfig configures the signing of answers. The key itself is given
// at run time with Server.SetSigningKey: it comes from the servers.
type DNSSECConfig struct {
	// Enabled turns signing on: DNSKEY is answered at the apex once a
	// key is set, and queries with the DO bit get RRSIGs and compact
	// denials. Default false.
	Enabled bool
	// SignatureValidity is how long a signature stays valid after it is
	// made. Short, since answers are TTL 0 and a signed answer replayed
	// by an attacker is believed until it expires; a signature is
	// replaced once half of this has passed, so every answer carries at
	// least half of it. Default 1h; at least 10m.
	SignatureValidity time.Duration
}

// minSignatureValidity is the least DNSSECConfig.SignatureValidity: a
// validator whose clock is ahead of ours by more than half of it rejects
// answers.
const minSignatureValidity = 10 * time.Minute

func (c DNSSECConfig) validate(bad func(field, format string, args ...any)) {
	if c.Enabled && c.SignatureValidity < minSignatureValidity {
		bad("DNSSEC.SignatureValidity", "must be at least %s, got %s", minSignatureValidity, c.SignatureValidity)
	}
}

// SigningKey is a DNSSEC private key as the resolver signs with it.
type SigningKey = ecdsa.PrivateKey

// SetSigningKey makes the server sign with key (an ECDSA P-256 key),
// replacing any key before it; nil stops signing. Signing also needs
// Config.DNSSEC.Enabled; without it SetSigningKey fails.
func (s *Server) SetSigningKey(key *SigningKey) error {
	if key == nil {
		s.signer.Store(nil)
		return nil
	}
	if !s.cfg.DNSSEC.Enabled {
		return errors.New("resolver: DNSSEC is not enabled")
	}
	sg, err := newSigner(key, s.zones, s.cfg.DNSSEC.SignatureValidity)
	if err != nil {
		return err
	}
	s.signer.Store(sg)
	return nil
}

// DNSKEY returns the DNSKEY record of key for the zone domain (fully
// qualified), as the apex answers it and a trust anchor names it.
func DNSKEY(domain string, key *SigningKey) (*dns.DNSKEY, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return nil, errors.New("resolver: a DNSSEC key must be an ECDSA P-256 key")
	}
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		return nil, fmt.Errorf("resolver: DNSSEC public key: %w", err)
	}
	return &dns.DNSKEY{
		Hdr:       dns.RR_Header{Name: dns.Fqdn(domain), Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags:     dnskeyFlags,
		Protocol:  3,
		Algorithm: AlgorithmECDSAP256,
		PublicKey: base64.StdEncoding.EncodeToString(pub[1:]), // RFC 6605 4: X || Y
	}, nil
}

// signer signs the answers of a server's zones with one key. It is
// immutable but for its signature cache.
type signer struct {
	key      *SigningKey
	validity time.Duration
	zones    map[*zones.Zone]*zoneKey
	sigs     sigCache
	sections sectionCache
	denials  denialCache
	now      func() time.Time // time.Now; tests move it
}

// zoneKey is the key's face in one zone: its DNSKEY record (owned by the
// zone's domain) and tag.
type zoneKey struct {
	dnskey []dns.RR // {DNSKEY}
	tag    uint16
	signer string // the zone's domain
}

func newSigner(key *SigningKey, zs []*zones.Zone, validity time.Duration) (*signer, error) {
	sg := &signer{key: key, validity: validity, zones: make(map[*zones.Zone]*zoneKey, len(zs)), now: time.Now}
	for _, z := range zs {
		k, err := DNSKEY(z.Domain(), key)
		if err != nil {
			return nil, err
		}
		sg.zones[z] = &zoneKey{dnskey: []dns.RR{k}, tag: k.KeyTag(), signer: z.Domain()}
	}
	sg.sigs.m = make(map[string]sigEntry)
	sg.sections.m = make(map[sectionID]sectionEntry)
	sg.denials.m = make(map[denialKey]sectionEntry)
	return sg, nil
}

// answer adds what DNSSEC asks of a reply to ans, the answer of zone z to
// a question (qname, qtype) of the given kind, whose lookup ended with
// err: DNSKEY at the apex, and when do (the query's DO bit) the RRSIGs
// and a compact denial for a negative answer. A name error becomes a
// NODATA answer whose NSEC says the name does not exist (NXNAME in its
// bitmap, RFC 9824), unless the client set the CO bit (co), which lets
// the rcode stay NXDOMAIN. kept says ans's sections are given again to
// later questions, so their signed forms are worth keeping by identity
// (sectionCache). It returns whether the answer was signed.
func (sg *signer) answer(z *zones.Zone, kind zones.Kind, qname string, qtype uint16, ans zones.Answer, err error, kept, do, co bool) (zones.Answer, error, bool) {
	zk := sg.zones[z]
	if zk == nil {
		return ans, err, false
	}
	if kind == zones.KindApex && err == nil {
		switch qtype {
		case dns.TypeDNSKEY:
			ans = zones.Answer{Answer: zk.dnskey, Result: zones.Success}
		case dns.TypeANY:
			ans.Answer = append(slices.Clip(ans.Answer), zk.dnskey...)
			kept = false // a new slice: not worth keeping by identity
		}
	}
	if !do {
		return ans, err, false
	}
	now := sg.now()
	nameError := ans.Result == zones.NameError || errors.Is(err, ErrUnknownDatacenter)
	switch {
	case nameError:
		ans = zones.Answer{Ns: sg.denial(z, zk, qname, 0, kind, now), Result: zones.NoData}
		if co {
			ans.Result = zones.NameError
		}
		return ans, nil, true
	case err != nil:
		return ans, err, false
	case ans.Result == zones.NoData || ans.Result == zones.Success && len(ans.Answer) == 0:
		return zones.Answer{Answer: ans.Answer, Ns: sg.denial(z, zk, qname, qtype, kind, now), Extra: ans.Extra, Result: ans.Result}, nil, true
	case ans.Result == zones.Success:
		sign := sg.signSets
		if kept {
			sign = sg.signSection
		}
		ans.Answer = sign(zk, ans.Answer, now)
		ans.Ns = sign(zk, ans.Ns, now)
		ans.Extra = sign(zk, ans.Extra, now)
		return ans, nil, true
	}
	return ans, err, false
}

// denial returns the signed authority section denying qtype at qname
// (of the given kind), or with qtype 0 the name itself: the SOA and the
// compact NSEC, each with its signature. Denials are kept (denialCache)
// by name and type, so that a name asked again and again (AAAA of a
// service with IPv4 instances only, as stub resolvers ask beside A) is
// not built and looked up anew each time.
func (sg *signer) denial(z *zones.Zone, zk *zoneKey, qname string, qtype uint16, kind zones.Kind, now time.Time) []dns.RR {
	key := denialKey{zone: z, qname: qname, qtype: qtype}
	if ns, ok := sg.denials.get(key, now); ok {
		return ns
	}
	types := []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}
	if qtype != 0 {
		types = typesAt(kind, qtype)
	}
	ns := sg.signSection(zk, z.Negative(zones.NoData).Ns, now)
	ns = append(ns, sg.signSets(zk, []dns.RR{sg.nsec(z, qname, types)}, now)...)
	sg.denials.put(key, ns, now.Add(sg.validity/4))
	return ns
}

// nsec returns the compact denial owned by qname: the next name is
// qname's immediate successor in canonical order, so the record covers no
// other name, and types lists what does exist at qname.
func (sg *signer) nsec(z *zones.Zone, qname string, types []uint16) *dns.NSEC {
	soa := z.SOA()
	return &dns.NSEC{
		// RFC 9077: the TTL of a denial is the smaller of the SOA's TTL
		// and its MINIMUM.
		Hdr:        dns.RR_Header{Name: qname, Rrtype: dns.TypeNSEC, Class: dns.ClassINET, Ttl: min(soa.Hdr.Ttl, soa.Minttl)},
		NextDomain: `\000.` + qname,
		TypeBitMap: types,
	}
}

// typesAt returns the type bitmap of the compact denial of qtype at a
// name of the given kind: the types cairn may answer at such a name, but
// qtype. A type listed that the name happens not to hold (AAAA for a
// service with IPv4 instances only) costs the validator a question, and
// that question its own denial; a type left out that exists would be
// denied wrongly, so the list errs on the side of more.
func typesAt(kind zones.Kind, qtype uint16) []uint16 {
	var types []uint16
	switch kind {
	case zones.KindApex:
		types = []uint16{dns.TypeNS, dns.TypeSOA, dns.TypeDNSKEY}
	case zones.KindService, zones.KindQuery:
		types = []uint16{dns.TypeA, dns.TypeSRV, dns.TypeAAAA}
	case zones.KindNode:
		types = []uint16{dns.TypeA, dns.TypeTXT, dns.TypeAAAA}
	case zones.KindAddr, zones.KindNameserver:
		types = []uint16{dns.TypeA, dns.TypeAAAA}
	}
	types = slices.DeleteFunc(types, func(t uint16) bool { return t == qtype })
	types = append(types, dns.TypeRRSIG, dns.TypeNSEC)
	slices.Sort(types) // miekg/dns packs a bitmap only in type order
	return types
}

// signSection returns rrs followed by the signature of each of its RRsets.
// rrs itself is not modified. It is for a section the resolver answers
// again and again, one slice shared by every question (the zones' own
// records, an answer kept in an answerMemo): the signed section is kept by
// the slice's identity, and a repeated question costs one map lookup.
// Sections built per question go to signSets, so as not to fill this
// cache with slices never seen again.
func (sg *signer) signSection(zk *zoneKey, rrs []dns.RR, now time.Time) []dns.RR {
	if len(rrs) == 0 {
		return rrs
	}
	id := sectionID{first: &rrs[0], n: len(rrs)}
	if signed, ok := sg.sections.get(id, now); ok {
		return signed
	}
	out := sg.signSets(zk, rrs, now)
	sg.sections.put(id, rrs, out, now.Add(sg.validity/4))
	return out
}

// signSets returns rrs followed by the signature of each of its RRsets,
// each from sigCache when it holds one.
func (sg *signer) signSets(zk *zoneKey, rrs []dns.RR, now time.Time) []dns.RR {
	if len(rrs) == 0 {
		return rrs
	}
	out := make([]dns.RR, len(rrs), len(rrs)+2)
	copy(out, rrs)
	for i, rr := range rrs {
		h := rr.Header()
		if h.Rrtype == dns.TypeOPT || h.Rrtype == dns.TypeRRSIG || seenSet(rrs[:i], h) {
			continue
		}
		set := rrset(rrs[i:], h)
		if sig := sg.sign(zk, set, now); sig != nil {
			out = append(out, sig)
		}
	}
	return out
}

// seenSet reports whether an RRset of h's owner and type starts in rrs.
func seenSet(rrs []dns.RR, h *dns.RR_Header) bool {
	for _, rr := range rrs {
		if o := rr.Header(); o.Rrtype == h.Rrtype && dns.CanonicalName(o.Name) == dns.CanonicalName(h.Name) {
			return true
		}
	}
	return false
}

// rrset returns the records of rrs of h's owner and type: rrs's prefix
// when they come first and together, as the zones build them, else a new
// slice.
func rrset(rrs []dns.RR, h *dns.RR_Header) []dns.RR {
	same := func(rr dns.RR) bool {
		o := rr.Header()
		return o.Rrtype == h.Rrtype && dns.CanonicalName(o.Name) == dns.CanonicalName(h.Name)
	}
	n := 0
	for n < len(rrs) && same(rrs[n]) {
		n++
	}
	rest := rrs[n:]
	if !slices.ContainsFunc(rest, same) {
		return rrs[:n]
	}
	set := slices.Clone(rrs[:n])
	for _, rr := range rest {
		if same(rr) {
			set = append(set, rr)
		}
	}
	return set
}

// sign returns the signature of set, from the cache while it has at least
// half of its validity left, else a new one. nil when the set cannot be
// signed (a record miekg/dns cannot pack), which leaves it unsigned for
// the validator to reject rather than failing the reply.
func (sg *signer) sign(zk *zoneKey, set []dns.RR, now time.Time) dns.RR {
	key, ok := sg.sigs.key(zk.tag, set)
	if !ok {
		return nil
	}
	if sig, ok := sg.sigs.get(key, now); ok {
		return sig
	}
	// Expiry jitter (up to a tenth of the validity) spreads the renewal
	// of signatures made together, such as after a key change.
	jitter := time.Duration(rand.Int64N(int64(sg.validity/10) + 1))
	sig := &dns.RRSIG{
		Hdr:        dns.RR_Header{Ttl: set[0].Header().Ttl}, // Sign fills in the rest
		Algorithm:  AlgorithmECDSAP256,
		KeyTag:     zk.tag,
		SignerName: zk.signer,
		Inception:  uint32(now.Add(-inceptionSkew).Unix()),
		Expiration: uint32(now.Add(sg.validity - jitter).Unix()),
	}
	if err := sig.Sign(sg.key, set); err != nil {
		return nil
	}
	sg.sigs.put(key, sig, now.Add((sg.validity-jitter)/2))
	return sig
}

// sigCache keeps signatures by the wire form of the RRset they sign (its
// records' owner, type, class, TTL and data, in the order given: the
// zones build a set in the same order each time). Readers share a read
// lock; a lookup allocates nothing.
type sigCache struct {
	mu   sync.RWMutex
	m    map[string]sigEntry
	bufs sync.Pool // *[]byte, the scratch a key is packed in
}

type sigEntry struct {
	sig     *dns.RRSIG
	renewAt int64 // Unix nanoseconds after which a new signature is made
}

// cacheKey is a packed RRset, in a pooled buffer: the map is indexed by
// string(*b), which the compiler does without a copy.
type cacheKey struct {
	b *[]byte
}

// key packs set (and the key tag, so a new key never finds an old key's
// signature) into a pooled buffer. ok is false when a record will not
// pack.
func (c *sigCache) key(tag uint16, set []dns.RR) (cacheKey, bool) {
	b, _ := c.bufs.Get().(*[]byte)
	if b == nil {
		b = new([]byte)
		*b = make([]byte, 512)
	}
	buf := (*b)[:cap(*b)]
	buf[0], buf[1] = byte(tag>>8), byte(tag)
	off := 2
	for _, rr := range set {
		for {
			n, err := dns.PackRR(rr, buf, off, nil, false)
			if err == nil {
				off = n
				break
			}
			if len(buf) >= dns.MaxMsgSize {
				c.bufs.Put(b)
				return cacheKey{}, false
			}
			buf = append(buf[:cap(buf)], make([]byte, len(buf))...)
		}
	}
	*b = buf[:off]
	return cacheKey{b: b}, true
}

func (c *sigCache) get(k cacheKey, now time.Time) (*dns.RRSIG, bool) {
	c.mu.RLock()
	e, ok := c.m[string(*k.b)]
	c.mu.RUnlock()
	if ok && now.UnixNano() < e.renewAt {
		c.bufs.Put(k.b)
		return e.sig, true
	}
	return nil, false
}

func (c *sigCache) put(k cacheKey, sig *dns.RRSIG, renewAt time.Time) {
	key := string(*k.b)
	c.bufs.Put(k.b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSignatures {
		c.m = make(map[string]sigEntry)
	}
	c.m[key] = sigEntry{sig: sig, renewAt: renewAt.UnixNano()}
}

// sectionCache keeps signed sections by the identity of the unsigned
// section: its first element's address and its length. An entry holds
// the unsigned slice too, so its array cannot be freed and its address
// reused by another section while the entry lives; and shared sections
// are never written (zones.Answer), so the same identity means the same
// records. An entry is kept for a quarter of the validity, well before
// any of its signatures needs renewing (sigCache renews at half).
type sectionCache struct {
	mu sync.RWMutex
	m  map[sectionID]sectionEntry
}

type sectionID struct {
	first *dns.RR
	n     int
}

type sectionEntry struct {
	unsigned, signed []dns.RR
	expires          int64 // Unix nanoseconds
}

func (c *sectionCache) get(id sectionID, now time.Time) ([]dns.RR, bool) {
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	if ok && now.UnixNano() < e.expires {
		return e.signed, true
	}
	return nil, false
}

func (c *sectionCache) put(id sectionID, unsigned, signed []dns.RR, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSignatures {
		c.m = make(map[sectionID]sectionEntry)
	}
	c.m[id] = sectionEntry{unsigned: unsigned, signed: signed, expires: expires.UnixNano()}
}

// denialCache keeps signed denials by zone, name and type (0: the name
// does not exist), for a quarter of the validity, as sectionCache keeps
// sections.
type denialCache struct {
	mu sync.RWMutex
	m  map[denialKey]sectionEntry
}

type denialKey struct {
	zone  *zones.Zone
	qname string
	qtype uint16
}

func (c *denialCache) get(k denialKey, now time.Time) ([]dns.RR, bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if ok && now.UnixNano() < e.expires {
		return e.signed, true
	}
	return nil, false
}

func (c *denialCache) put(k denialKey, signed []dns.RR, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSignatures {
		c.m = make(map[denialKey]sectionEntry)
	}
	c.m[k] = sectionEntry{signed: signed, expires: expires.UnixNano()}
}
