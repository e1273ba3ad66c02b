// Package zones owns cairn's DNS naming scheme and the records answered
// under it.
//
// Parse turns a question name into a Query: which kind of name it is
// (a service, a node, an encoded address, the zone apex, …), the service or
// node it names, its tag and its datacenter. The ...Answer methods of Zone
// turn a Query, a question type and the catalog data a caller looked up
// into the answer, authority and additional sections of a reply plus a
// Result (Success, NameError, NoData, Refused, ServerFailure), in the way
// CoreDNS's file plugin answers a lookup. Choosing the rcode from the
// Result, EDNS0, truncation and everything else about the message is the
// resolver's job, not this package's.
//
// The name forms under the zone's domain (the datacenter label may be
// omitted, meaning the local datacenter):
//
//	<svc>.service[.<dc>].<domain>
//	<tag>.<svc>.service[.<dc>].<domain>
//	_<svc>._<tag>.service[.<dc>].<domain>  RFC 2782; _tcp or _udp as <tag>: any
//	<node>.node[.<dc>].<domain>     A/AAAA: its address; TXT: its metadata
//	<hex>.addr[.<dc>].<domain>      8 hex digits: IPv4, 32: IPv6
//	ns.<domain>                     the name server named by the apex NS record
//	<domain>                        the apex: SOA and NS
//	<dc>.<domain>, service[.<dc>].<domain>, node[.<dc>].<domain>,
//	addr[.<dc>].<domain>            empty non-terminals (RFC 8020)
//
// Labels are letters, digits and '-' (matched case-insensitively); a
// leading '_' is allowed only in the first two labels of an RFC 2782
// service name, and then on both.
//
// # Negative answers
//
// Both kinds of negative answer carry the zone's SOA in the authority
// section so that downstream resolvers can cache them (RFC 2308); the
// SOA's own TTL equals its minimum field, SOAConfig.MinTTL (default 5s).
//
// NameError (NXDOMAIN) — the name does not exist:
//   - a name under the domain of none of the forms above (KindInvalid):
//     an unknown keyword, too many or too few labels, a character outside
//     the label alphabet, '_' outside the RFC 2782 position, an .addr.
//     label that is not 8 or 32 hex digits;
//   - a service (with the tag, if any) that has no healthy instance;
//   - a node that does not exist;
//   - an empty non-terminal naming a datacenter other than the local one
//     (until the WAN pool tells which datacenters exist);
//   - a datacenter the data source does not know: the resolver answers
//     Negative(NameError) when its Source says so.
//
// NoData (NOERROR, no answer records) — the name exists, but has no
// record of the type asked for:
//   - a service with healthy instances, asked for a type other than A,
//     AAAA, SRV and ANY, or for A or AAAA when none of its addresses is
//     of that family;
//   - a node asked for a type other than A, AAAA, ANY and TXT, for the
//     family its address is not of, or for TXT when it has no metadata
//     or Config.NodeMetaTXT is off;
//   - an .addr. name asked for the other family or another type;
//   - the apex asked for a type other than SOA, NS and ANY;
//   - ns.<domain> without Config.NSAddress, or asked for the other family;
//   - an empty non-terminal of the local datacenter, for every type.
//
// ANY is answered minimally (RFC 8482): a service's or node's address
// records, the apex's SOA and NS, never everything a name owns.
// Names outside the domain are KindOutside; the zone has no answer for
// them (Refused), and what to do with them is the resolver's business.
//
// zones is pure: no I/O, no goroutines, no clocks after New, no logging. It
// imports miekg/dns and catalog only and must not import any other cairn
// package (in particular not resolver or cache, which import it).
//
// A Zone is immutable after New and safe for concurrent use. The sections
// of an Answer may share records (and backing arrays) with other answers:
// callers must not modify the records nor write into the slices; copying a
// slice before reordering or appending to it is enough.
package zones
