package zones

import (
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// maxTXTString is the longest character-string of a TXT record (RFC 1035
// 3.3): a length byte, then the data.
const maxTXTString = 255

// nodeMetaTXT returns one TXT record per pair of meta, "key=value", in the
// order of the keys. A pair longer than a character-string is spread over
// several strings of one record, as RFC 7208 does for long SPF records.
func nodeMetaTXT(owner string, ttl uint32, meta map[string]string) []dns.RR {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rrs := make([]dns.RR, len(keys))
	for i, k := range keys {
		rrs[i] = &dns.TXT{Hdr: header(owner, dns.TypeTXT, ttl), Txt: txtStrings(k + "=" + meta[k])}
	}
	return rrs
}

// txtStrings cuts s into character-strings of at most maxTXTString bytes
// and spells each the way miekg/dns holds them: a backslash escapes the
// next byte, and \DDD is a byte by its decimal value.
func txtStrings(s string) []string {
	out := make([]string, 0, len(s)/maxTXTString+1)
	for {
		n := min(len(s), maxTXTString)
		out = append(out, escapeTXT(s[:n]))
		s = s[n:]
		if s == "" {
			return out
		}
	}
}

// escapeTXT escapes backslashes and the bytes that are not printable
// ASCII; it returns s itself when there is nothing to escape.
func escapeTXT(s string) string {
	i := 0
	for i < len(s) && s[i] >= ' ' && s[i] <= '~' && s[i] != '\\' {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c < ' ' || c > '~':
			b.WriteByte('\\')
			b.WriteByte('0' + c/100)
			b.WriteByte('0' + c/10%10)
			b.WriteByte('0' + c%10)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
