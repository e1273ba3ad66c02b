package zones

import (
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// Reverse-mapping suffixes (RFC 1035 3.5, RFC 3596 2.5), fully qualified.
const (
	suffixV4 = ".in-addr.arpa."
	suffixV6 = ".ip6.arpa."
)

// ParseReverse returns the address a reverse-mapping name encodes:
// d.c.b.a.in-addr.arpa. for a.b.c.d, or 32 nibbles under ip6.arpa. qname
// must be lowercase and fully qualified. Partial names (a /24's
// 3.2.1.in-addr.arpa.) are not addresses and report false.
func ParseReverse(qname string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(qname, suffixV4); ok {
		return parseReverseV4(rest)
	}
	if rest, ok := strings.CutSuffix(qname, suffixV6); ok {
		return parseReverseV6(rest)
	}
	return netip.Addr{}, false
}

func parseReverseV4(rest string) (netip.Addr, bool) {
	var b [4]byte
	for i := 3; i >= 0; i-- {
		label := rest
		if i > 0 {
			dot := strings.IndexByte(rest, '.')
			if dot < 0 {
				return netip.Addr{}, false
			}
			label, rest = rest[:dot], rest[dot+1:]
		}
		v, ok := octet(label)
		if !ok {
			return netip.Addr{}, false
		}
		b[i] = v
	}
	return netip.AddrFrom4(b), true
}

// octet parses a decimal 0–255 without leading zeros.
func octet(s string) (byte, bool) {
	if s == "" || len(s) > 3 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return byte(v), v <= 255
}

func parseReverseV6(rest string) (netip.Addr, bool) {
	// 32 nibbles, each one hex digit and a dot, the last without the dot.
	if len(rest) != 63 {
		return netip.Addr{}, false
	}
	var b [16]byte
	for i := 0; i < 32; i++ {
		c := rest[2*i]
		if i < 31 && rest[2*i+1] != '.' {
			return netip.Addr{}, false
		}
		v, ok := fromHex(c)
		if !ok {
			return netip.Addr{}, false
		}
		// The first label is the lowest nibble of the last byte.
		pos := 31 - i
		if pos%2 == 0 {
			b[pos/2] |= v << 4
		} else {
			b[pos/2] |= v
		}
	}
	return netip.AddrFrom16(b), true
}

// ReverseAnswer answers a reverse-mapping question for an address held by
// the given nodes and services (their names): one PTR per node, naming
// <node>.node.<dc>.<domain>, and one per service, naming
// <service>.service.<dc>.<domain>. An address nothing holds is a NameError
// without an SOA: cairn is not the authority for the reverse zones, so the
// resolver may forward such questions instead. Other qtypes than PTR (and
// ANY) are NoData.
func (z *Zone) ReverseAnswer(qname string, qtype uint16, nodes, services []string) Answer {
	if len(nodes) == 0 && len(services) == 0 {
		return Answer{Result: NameError}
	}
	if qtype != dns.TypePTR && qtype != dns.TypeANY {
		return Answer{Result: NoData}
	}
	rrs := make([]dns.RR, 0, len(nodes)+len(services))
	suffix := "." + z.dc + "." + z.domain
	for _, n := range nodes {
		rrs = append(rrs, &dns.PTR{Hdr: header(qname, dns.TypePTR, z.ptrTTL), Ptr: strings.ToLower(n) + "." + keywordNode + suffix})
	}
	for _, s := range services {
		rrs = append(rrs, &dns.PTR{Hdr: header(qname, dns.TypePTR, z.ptrTTL), Ptr: strings.ToLower(s) + "." + keywordService + suffix})
	}
	return Answer{Answer: rrs}
}
