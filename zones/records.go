package zones

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/catalog"
)

// Result is the outcome of a lookup; the resolver turns it into an rcode.
type Result uint8

// The results of a lookup.
const (
	// Success: the name exists and Answer holds the records of the type
	// asked for.
	Success Result = iota
	// NameError: the name does not exist (NXDOMAIN); Ns holds the SOA.
	NameError
	// NoData: the name exists but has no records of the type asked for;
	// Ns holds the SOA.
	NoData
	// Refused: the name is not one this zone answers for.
	Refused
	// ServerFailure: the answer could not be found.
	ServerFailure
)

var resultNames = [...]string{
	Success:       "success",
	NameError:     "name error",
	NoData:        "no data",
	Refused:       "refused",
	ServerFailure: "server failure",
}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "Result(" + strconv.Itoa(int(r)) + ")"
}

// Answer is the outcome of a lookup: the sections of the reply and the
// Result. The sections may be shared with other answers (see the package
// documentation): do not modify their records or write into them.
type Answer struct {
	Answer []dns.RR
	Ns     []dns.RR
	Extra  []dns.RR
	Result Result
	// Ordered says the answer records are in the order to give them in
	// (nearest first); the resolver shuffles the others.
	Ordered bool
}

// Negative returns a NameError or NoData answer: no records, and the SOA in
// the authority section so the denial can be cached (RFC 2308).
func (z *Zone) Negative(r Result) Answer {
	return Answer{Ns: z.soaSection, Result: r}
}

// ServiceAnswer answers a KindService query of type qtype from insts, the
// healthy instances of the service (with the tag, if any) in the query's
// datacenter.
//
// A, AAAA and ANY are answered with the instances' addresses (the
// service's own, else its node's), one record per distinct address; SRV
// with one record per instance whose target is the instance's node name
// when it uses its node's address and an .addr. name otherwise, with the
// target's address record in the additional section. No instances is a
// NameError; instances but no record of qtype is NoData. The records'
// TTL is the service's (see Config.ServiceTTLs).
func (z *Zone) ServiceAnswer(q Query, qtype uint16, insts []catalog.ServiceInstance) Answer {
	if len(insts) == 0 {
		return z.Negative(NameError)
	}
	ttl := z.ttlFor(q.Name)
	var a Answer
	switch qtype {
	case dns.TypeA, dns.TypeAAAA, dns.TypeANY:
		a.Answer = addressRecords(q.Qname, qtype, ttl, insts)
	case dns.TypeSRV:
		a.Answer, a.Extra = z.srvRecords(q.Qname, q.Datacenter, ttl, insts)
	}
	if len(a.Answer) == 0 {
		return z.Negative(NoData)
	}
	return a
}

// addressRecords returns one A or AAAA record for each distinct address of
// insts that qtype asks for.
func addressRecords(owner string, qtype uint16, ttl uint32, insts []catalog.ServiceInstance) []dns.RR {
	var rrs []dns.RR
	var seen smallSet[netip.Addr]
	for _, inst := range insts {
		if inst.Service == nil || inst.Node == nil {
			continue
		}
		a, ok := parseAddr(inst.Address())
		if !ok || !wants(qtype, a) || !seen.add(a) {
			continue
		}
		if rrs == nil {
			rrs = make([]dns.RR, 0, len(insts))
		}
		rrs = append(rrs, addrRR(owner, a, ttl))
	}
	return rrs
}

// srvKey identifies an SRV record of an RRset, which holds no duplicates.
type srvKey struct {
	target string
	port   uint16
}

// srvRecords returns the SRV records of insts and their targets' address
// records; ttl is the TTL of the SRV records and of .addr. targets.
func (z *Zone) srvRecords(owner, dc string, ttl uint32, insts []catalog.ServiceInstance) (answer, extra []dns.RR) {
	answer = make([]dns.RR, 0, len(insts))
	var seen smallSet[srvKey]
	var targets smallSet[string]
	for _, inst := range insts {
		if inst.Service == nil || inst.Node == nil {
			continue
		}
		target, glue := z.srvTarget(dc, ttl, inst)
		if target == "" {
			continue
		}
		port := uint16(min(max(inst.Service.Port, 0), 65535))
		if !seen.add(srvKey{target, port}) {
			continue
		}
		answer = append(answer, &dns.SRV{
			Hdr:      header(owner, dns.TypeSRV, ttl),
			Priority: 1,
			Weight:   weight(inst),
			Port:     port,
			Target:   target,
		})
		if glue != nil && targets.add(target) {
			if extra == nil {
				extra = make([]dns.RR, 0, len(insts))
			}
			extra = append(extra, glue)
		}
	}
	return answer, extra
}

// srvTarget returns the SRV target of an instance and the target's address
// record: <node>.node.<dc>.<domain> when the instance is reached at its
// node's address, else <hex>.addr.<dc>.<domain>. It returns "" when the
// instance has no usable address. An .addr. target's record has TTL ttl, a
// node's the node TTL.
func (z *Zone) srvTarget(dc string, ttl uint32, inst catalog.ServiceInstance) (string, dns.RR) {
	nodeAddr, nodeOK := parseAddr(inst.Node.Address)
	addr, ok := nodeAddr, nodeOK
	if inst.Service.Address != "" {
		addr, ok = parseAddr(inst.Service.Address)
	}
	node := strings.ToLower(inst.Node.Node)
	if nodeOK && ok && addr == nodeAddr && validLabel(node) {
		target := node + "." + keywordNode + "." + dc + "." + z.domain
		return target, addrRR(target, addr, z.nodeTTL)
	}
	if !ok {
		return "", nil
	}
	target := encodeAddr(addr) + "." + keywordAddr + "." + dc + "." + z.domain
	return target, addrRR(target, addr, ttl)
}

// weight returns the SRV weight of an instance: its passing weight while
// all its checks pass, its warning weight otherwise.
func weight(inst catalog.ServiceInstance) uint16 {
	w := inst.Service.Weights.Passing
	if inst.Status() != catalog.HealthPassing {
		w = inst.Service.Weights.Warning
	}
	return uint16(min(max(w, 0), 65535))
}

// NodeAnswer answers a KindNode query of type qtype about node, which is
// nil when there is no such node (a NameError). A, AAAA and ANY are
// answered with the node's address record; with Config.NodeMetaTXT, TXT
// is answered with the node's metadata (see nodeMetaTXT), which A and
// AAAA answers also carry in the additional section with
// Config.AdditionalNodeMetaTXT. Anything else is NoData.
func (z *Zone) NodeAnswer(q Query, qtype uint16, node *catalog.Node) Answer {
	if node == nil {
		return z.Negative(NameError)
	}
	if qtype == dns.TypeTXT {
		if !z.nodeMetaTXT || len(node.Meta) == 0 {
			return z.Negative(NoData)
		}
		return Answer{Answer: nodeMetaTXT(q.Qname, z.nodeTTL, node.Meta)}
	}
	a, ok := parseAddr(node.Address)
	if !ok || !wants(qtype, a) {
		return z.Negative(NoData)
	}
	ans := Answer{Answer: []dns.RR{addrRR(q.Qname, a, z.nodeTTL)}}
	if qtype != dns.TypeANY && z.additionalNodeMeta && len(node.Meta) != 0 {
		ans.Extra = nodeMetaTXT(q.Qname, z.nodeTTL, node.Meta)
	}
	return ans
}

// EmptyNonTerminalAnswer answers a KindEmptyNonTerminal query: NoData for
// every type when it is in the local datacenter, NameError in any other.
// Other datacenters' names are not told apart from names that do not
// exist: the resolver asks nothing of its Source for these names, and
// only the WAN pool will tell which datacenters exist.
func (z *Zone) EmptyNonTerminalAnswer(q Query) Answer {
	if q.Datacenter != z.dc {
		return z.Negative(NameError)
	}
	return z.Negative(NoData)
}

// AddrAnswer answers a KindAddr query of type qtype: an A record for an
// IPv4 address, an AAAA record for an IPv6 one. A query without a valid
// address is a NameError.
func (z *Zone) AddrAnswer(q Query, qtype uint16) Answer {
	if !q.Addr.IsValid() {
		return z.Negative(NameError)
	}
	if !wants(qtype, q.Addr) {
		return z.Negative(NoData)
	}
	return Answer{Answer: []dns.RR{addrRR(q.Qname, q.Addr, z.serviceTTL)}}
}

// ApexAnswer answers a question about the zone's domain itself: its SOA,
// its NS record (with the name server's address as glue when configured),
// or both for ANY.
func (z *Zone) ApexAnswer(qtype uint16) Answer {
	switch qtype {
	case dns.TypeSOA:
		return Answer{Answer: z.soaSection}
	case dns.TypeNS:
		return Answer{Answer: z.nsSection, Extra: z.glue}
	case dns.TypeANY:
		return Answer{Answer: z.anySection, Extra: z.glue}
	}
	return z.Negative(NoData)
}

// NameserverAnswer answers a question about ns.<domain>, the name server
// the apex NS record names: its configured address, if any.
func (z *Zone) NameserverAnswer(qtype uint16) Answer {
	if !z.nsAddr.IsValid() || !wants(qtype, z.nsAddr) {
		return z.Negative(NoData)
	}
	return Answer{Answer: z.glue}
}

// parseAddr parses an IP address; IPv4-mapped IPv6 addresses are taken as
// the IPv4 addresses they map.
func parseAddr(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// wants reports whether a question of type qtype is answered with a.
func wants(qtype uint16, a netip.Addr) bool {
	switch qtype {
	case dns.TypeANY:
		return true
	case dns.TypeA:
		return a.Is4()
	case dns.TypeAAAA:
		return a.Is6()
	}
	return false
}

// addrRR returns the A record (IPv4) or AAAA record (IPv6) of a.
func addrRR(owner string, a netip.Addr, ttl uint32) dns.RR {
	if a.Is4() {
		return &dns.A{Hdr: header(owner, dns.TypeA, ttl), A: net.IP(a.AsSlice())}
	}
	return &dns.AAAA{Hdr: header(owner, dns.TypeAAAA, ttl), AAAA: net.IP(a.AsSlice())}
}

// smallSet is a set that needs no allocation while it holds a few
// elements and switches to a map beyond that.
type smallSet[K comparable] struct {
	n    int
	few  [8]K
	many map[K]struct{}
}

// add adds k and reports whether it was not in the set yet.
func (s *smallSet[K]) add(k K) bool {
	if s.many != nil {
		if _, ok := s.many[k]; ok {
			return false
		}
		s.many[k] = struct{}{}
		return true
	}
	for _, f := range s.few[:s.n] {
		if f == k {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = k
		s.n++
		return true
	}
	s.many = make(map[K]struct{}, 2*len(s.few))
	for _, f := range s.few {
		s.many[f] = struct{}{}
	}
	s.many[k] = struct{}{}
	return true
}
