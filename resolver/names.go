package resolver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// checkZones checks the zones given to New: at least one, none nil, and
// none whose domain is (under) an earlier one's, which would answer all
// its names.
func checkZones(zs []*zones.Zone) error {
	if len(zs) == 0 {
		return errors.New("resolver: no zone")
	}
	for i, z := range zs {
		if z == nil {
			return fmt.Errorf("resolver: zone %d is nil", i)
		}
		for _, earlier := range zs[:i] {
			if earlier.Domain() == z.Domain() {
				return fmt.Errorf("resolver: zone %q is given twice", z.Domain())
			}
			if dns.IsSubDomain(earlier.Domain(), z.Domain()) {
				return fmt.Errorf("resolver: zone %q is under zone %q, which comes first and would answer all its names",
					z.Domain(), earlier.Domain())
			}
		}
	}
	return nil
}

// parse parses name, lowercase, with the first zone it is under, and
// returns that zone and the query. A name under none of the zones is
// returned as the primary zone's KindOutside query.
func (s *Server) parse(name string) (*zones.Zone, zones.Query) {
	q := s.zone.Parse(name)
	if q.Kind != zones.KindOutside {
		return s.zone, q
	}
	for _, z := range s.zones[1:] {
		if alt := z.Parse(name); alt.Kind != zones.KindOutside {
			return z, alt
		}
	}
	return s.zone, q
}

// echoCase gives the records of m's answer and additional sections owned
// by lower, the lowercased question name, the spelling the client asked
// with, so that 0x20 randomisation (draft-vixie-dnsext-dns0x20) survives
// in the owner names as it does in the question. The records are shared:
// those renamed are replaced by copies, in copies of the sections. When
// the client asked in lowercase nothing is copied or allocated.
func echoCase(m *dns.Msg, lower, asked string) {
	if !strings.HasSuffix(asked, ".") {
		if len(asked)+1 == len(lower) && strings.HasPrefix(lower, asked) {
			return // lowercase, only not fully qualified
		}
		asked += "."
	}
	if asked == lower || len(asked) != len(lower) {
		return // lowercase; or lowercasing changed the length, which only non-ASCII can, and miekg/dns escapes it
	}
	m.Answer = renamed(m.Answer, lower, asked)
	m.Extra = renamed(m.Extra, lower, asked)
}

// renamed returns rrs with the records owned by from replaced by copies
// owned by to: rrs itself when none is, else a new slice.
func renamed(rrs []dns.RR, from, to string) []dns.RR {
	var out []dns.RR
	for i, rr := range rrs {
		if rr.Header().Name != from {
			continue
		}
		if out == nil {
			out = append(make([]dns.RR, 0, len(rrs)), rrs...)
		}
		out[i] = withOwner(rr, to)
	}
	if out == nil {
		return rrs
	}
	return out
}

// withOwner returns a copy of rr owned by name. The copy is shallow for
// the types the zones build (their data is never written, so sharing it
// is safe) and deep for any other.
func withOwner(rr dns.RR, name string) dns.RR {
	var c dns.RR
	switch rr := rr.(type) {
	case *dns.A:
		cp := *rr
		c = &cp
	case *dns.AAAA:
		cp := *rr
		c = &cp
	case *dns.SRV:
		cp := *rr
		c = &cp
	case *dns.TXT:
		cp := *rr
		c = &cp
	case *dns.SOA:
		cp := *rr
		c = &cp
	case *dns.NS:
		cp := *rr
		c = &cp
	case *dns.PTR:
		cp := *rr
		c = &cp
	default:
		c = dns.Copy(rr)
	}
	c.Header().Name = name
	return c
}
