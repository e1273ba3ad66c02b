package zones

import (
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
)

// Kind is the kind of name a question asks about.
type Kind uint8

// The kinds of names. The zero Kind is KindInvalid.
const (
	// KindInvalid is a name under the zone's domain that is none of the
	// known forms; it is answered NXDOMAIN.
	KindInvalid Kind = iota
	// KindOutside is a name not under the zone's domain.
	KindOutside
	// KindApex is the zone's domain itself.
	KindApex
	// KindNameserver is ns.<domain>, the target of the apex NS record.
	KindNameserver
	// KindService is [<tag>.]<svc>.service[.<dc>].<domain>, or its
	// RFC 2782 spelling _<svc>._<tag>.service[.<dc>].<domain>.
	KindService
	// KindNode is <node>.node[.<dc>].<domain>.
	KindNode
	// KindAddr is <hex>.addr[.<dc>].<domain>, an IP address spelt in hex.
	KindAddr
	// KindEmptyNonTerminal is a name that owns no records but has names
	// below it (RFC 8020): <dc>.<domain> and service, node, addr and query
	// [.<dc>].<domain>. Parse cannot tell datacenters from other labels,
	// so <dc> is any label that is not a keyword nor "ns";
	// EmptyNonTerminalAnswer decides whether the datacenter exists.
	KindEmptyNonTerminal
	// KindQuery is <name or id>.query[.<dc>].<domain>, a prepared query.
	KindQuery
)

var kindNames = [...]string{
	KindInvalid:    "invalid",
	KindOutside:    "outside",
	KindApex:       "apex",
	KindNameserver: "nameserver",
	KindService:    "service",
	KindNode:       "node",
	KindAddr:       "addr",

	KindEmptyNonTerminal: "empty non-terminal",
	KindQuery:            "query",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// The keyword labels of the naming scheme.
const (
	keywordService = "service"
	keywordNode    = "node"
	keywordAddr    = "addr"
	keywordQuery   = "query"
	nameserverHost = "ns"
)

// maxLabels is the most labels a known name has before the domain, plus
// one so that a name with too many labels is recognised as such.
const maxLabels = 5

// Query is a parsed question name.
type Query struct {
	Kind Kind
	// Qname is the question name as parsed: lowercase and fully qualified.
	// Records answering the question are owned by it.
	Qname string
	// Name is the service name (KindService), the node name (KindNode),
	// the hex label (KindAddr) or the prepared query's name or ID
	// (KindQuery).
	Name string
	// Tag is the tag a service query asks for, "" for any (which the
	// RFC 2782 protocol labels _tcp and _udp also mean).
	Tag string
	// Datacenter is the datacenter the name is in: the one it names, or
	// the local one when it names none. Empty for KindOutside and
	// KindInvalid. For KindEmptyNonTerminal it is only the label in the
	// datacenter's place, which need not name a datacenter that exists.
	Datacenter string
	// Addr is the address a KindAddr name encodes.
	Addr netip.Addr
}

// Parse parses a question name, fully qualified or not. Parse lowercases
// the name itself, which costs nothing when it is lowercase already, as it
// is when the resolver has lowercased it once for the whole query.
//
// Parse allocates only to lowercase a name that is not, or to add the
// trailing dot to a name that lacks it.
func (z *Zone) Parse(qname string) Query {
	qname = strings.ToLower(qname)
	name := strings.TrimSuffix(qname, ".")
	if len(name) == len(qname) {
		qname += "."
	}
	q := Query{Qname: qname}
	switch {
	case name == z.origin:
		q.Kind, q.Datacenter = KindApex, z.dc
		return q
	case len(name) <= len(z.origin) || !strings.HasSuffix(name, z.origin) ||
		name[len(name)-len(z.origin)-1] != '.' || escaped(name, len(name)-len(z.origin)-1):
		q.Kind = KindOutside
		return q
	}
	return z.parseLabels(q, name[:len(name)-len(z.origin)-1])
}

// parseLabels parses the labels of a name under the domain (rest, without
// the domain and the dot before it) into q, whose Qname is set. A name of
// no known form leaves q's Kind KindInvalid.
func (z *Zone) parseLabels(q Query, rest string) Query {
	var labels [maxLabels]string
	n, under, ok := splitLabels(rest, &labels)
	if !ok {
		return q
	}
	if n == 1 && labels[0] == nameserverHost {
		q.Kind, q.Datacenter = KindNameserver, z.dc
		return q
	}
	// The keyword is the last label (the local datacenter is meant) or the
	// one before it (the last label is the datacenter). A keyword in last
	// place wins, so datacenters cannot be named like keywords.
	at, dc := n-1, z.dc
	kind := keywordKind(labels[at])
	if kind == KindInvalid {
		// <dc>.<domain> is an empty non-terminal when n == 1.
		at, dc = n-2, labels[n-1]
		if n >= 2 {
			kind = keywordKind(labels[at])
		}
	}
	// Labels with a leading '_' are RFC 2782's _<svc>._<tag> and nothing
	// else: both labels before "service", and only those.
	rfc2782 := kind == KindService && at == 2 && under == 0b11
	if under != 0 && !rfc2782 {
		return q
	}
	if at <= 0 {
		if at < 0 || kind != KindInvalid {
			q.Kind, q.Datacenter = KindEmptyNonTerminal, dc
		}
		return q
	}
	before := labels[:at]
	switch {
	case rfc2782:
		q.Name, q.Tag = before[0][1:], before[1][1:]
		if q.Tag == "tcp" || q.Tag == "udp" {
			q.Tag = "" // a protocol, not a tag: any instance
		}
	case kind == KindService && len(before) == 1:
		q.Name = before[0]
	case kind == KindService && len(before) == 2:
		q.Tag, q.Name = before[0], before[1]
	case kind == KindNode && len(before) == 1, kind == KindQuery && len(before) == 1:
		q.Name = before[0]
	case kind == KindAddr && len(before) == 1:
		if q.Addr, ok = decodeAddr(before[0]); !ok {
			return q
		}
		q.Name = before[0]
	default:
		return q
	}
	q.Kind, q.Datacenter = kind, dc
	return q
}

// keywordKind returns the kind of name a keyword label introduces, or
// KindInvalid when label is not a keyword.
func keywordKind(label string) Kind {
	switch label {
	case keywordService:
		return KindService
	case keywordNode:
		return KindNode
	case keywordAddr:
		return KindAddr
	case keywordQuery:
		return KindQuery
	}
	return KindInvalid
}

// splitLabels cuts name at its dots into labels, without allocating, and
// reports which labels begin with an underscore: bit i of under is set
// when label i does. It fails when name has more labels than labels
// holds, or a label that is neither valid (see validLabel) nor '_'
// followed by a valid label of at most 62 characters. That also rules out
// escapes such as "\." and "\000" in the presentation format miekg/dns
// gives names in.
func splitLabels(name string, labels *[maxLabels]string) (n int, under uint8, ok bool) {
	for start := 0; ; {
		end := strings.IndexByte(name[start:], '.')
		if end < 0 {
			end = len(name)
		} else {
			end += start
		}
		label := name[start:end]
		if n == len(labels) {
			return 0, 0, false
		}
		switch {
		case validLabel(label):
		case len(label) >= 2 && len(label) <= 63 && label[0] == '_' && validLabel(label[1:]):
			under |= 1 << n
		default:
			return 0, 0, false
		}
		labels[n] = label
		n++
		if end == len(name) {
			return n, under, true
		}
		start = end + 1
	}
}

// validLabel reports whether s is a label the naming scheme can hold.
func validLabel(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLDH(s[i]) {
			return false
		}
	}
	return true
}

// isLDH reports whether c is a lowercase letter, a digit or a hyphen.
func isLDH(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
}

// escaped reports whether the byte at i of a presentation-format name is
// escaped, that is preceded by an odd number of backslashes.
func escaped(name string, i int) bool {
	n := 0
	for i--; i >= 0 && name[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// decodeAddr decodes the label of an .addr. name: 8 hex digits are an IPv4
// address, 32 an IPv6 address.
func decodeAddr(label string) (netip.Addr, bool) {
	var b [16]byte
	if len(label) != 2*4 && len(label) != 2*16 {
		return netip.Addr{}, false
	}
	for i := 0; i < len(label); i += 2 {
		hi, ok1 := fromHex(label[i])
		lo, ok2 := fromHex(label[i+1])
		if !ok1 || !ok2 {
			return netip.Addr{}, false
		}
		b[i/2] = hi<<4 | lo
	}
	if len(label) == 2*4 {
		return netip.AddrFrom4([4]byte(b[:4])), true
	}
	return netip.AddrFrom16(b), true
}

// fromHex decodes one lowercase hex digit.
func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// encodeAddr spells an address as the label of an .addr. name. IPv4
// addresses (IPv4-mapped IPv6 ones included) take 8 hex digits, others 32.
func encodeAddr(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		return hex.EncodeToString(b[:])
	}
	b := a.As16()
	return hex.EncodeToString(b[:])
}
