package resolver

import (
	"encoding/binary"
	"strings"

	"github.com/miekg/dns"
)

// Names are most of what packing a reply costs: each suffix of each name
// is looked up, and kept, for compression pointers. miekg/dns keeps them
// in a map; a reply holds a dozen or two, which a short list finds
// without hashing. packName writes what dns.PackDomainName writes, with
// the same pointers, for plain names (fully qualified, no backslash, no
// empty or over-long label, as the zones make them: their wire form is
// their labels as spelt); the first other name, or a list grown past
// listLimit, moves the suffixes kept so far into the map and leaves the
// rest of the message to PackDomainName.

// listLimit is how many suffixes the list holds before the map takes
// over: past a few dozen, a linear search costs more than a hash.
const listLimit = 32

// maxCompressionOffset is the first offset a compression pointer cannot
// reach (14 bits); miekg/dns keeps no suffix written there or later.
const maxCompressionOffset = 1 << 14

// suffix is a name suffix written at off.
type suffix struct {
	name string
	off  int
}

// packName packs the domain name s into msg at off, as
// dns.PackDomainName(s, msg, off, comp, compress) would with comp holding
// the suffixes packed so far in the message, and returns the offset
// after it. With compress false, s is written whole, but later names may
// still point into it.
func (p *packer) packName(s string, msg []byte, off int, compress bool) (int, error) {
	if s == "." && !p.inMap {
		if off >= len(msg) {
			return 0, errNotPacked
		}
		msg[off] = 0
		return off + 1, nil
	}
	if !p.inMap && (len(p.list) >= listLimit || len(s) < 2 || s[len(s)-1] != '.' || strings.IndexByte(s, '\\') >= 0) {
		p.toMap()
	}
	if p.inMap {
		return dns.PackDomainName(s, msg, off, p.comp, compress)
	}
	kept, start := len(p.list), off
	for begin := 0; begin < len(s); {
		n := strings.IndexByte(s[begin:], '.') // s ends in a dot: n >= 0
		if n == 0 || n > 63 {
			// An empty or over-long label: not a plain name after all.
			// What was kept of it goes; its bytes are written over.
			clear(p.list[kept:])
			p.list = p.list[:kept]
			p.toMap()
			return dns.PackDomainName(s, msg, start, p.comp, compress)
		}
		if ptr, ok := p.find(s[begin:]); ok {
			if compress {
				if off+2 > len(msg) {
					return 0, errNotPacked
				}
				binary.BigEndian.PutUint16(msg[off:], uint16(ptr|0xC000))
				return off + 2, nil
			}
		} else if off < maxCompressionOffset {
			p.list = append(p.list, suffix{s[begin:], off})
		}
		if off+1+n > len(msg) {
			return 0, errNotPacked
		}
		msg[off] = byte(n)
		copy(msg[off+1:], s[begin:begin+n])
		off += 1 + n
		begin += n + 1
	}
	if off >= len(msg) {
		return 0, errNotPacked
	}
	msg[off] = 0
	return off + 1, nil
}

// toMap moves the suffixes kept so far into the map, which keeps the
// rest of the message's.
func (p *packer) toMap() {
	if p.comp == nil {
		p.comp = make(map[string]int, 2*listLimit)
	}
	for _, e := range p.list {
		p.comp[e.name] = e.off
	}
	p.inMap = true
}

// find returns where the suffix name was written, if it was.
func (p *packer) find(name string) (int, bool) {
	for _, e := range p.list {
		if e.name == name {
			return e.off, true
		}
	}
	return 0, false
}
