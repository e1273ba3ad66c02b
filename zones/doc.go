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
//	<node>.node[.<dc>].<domain>
//	<hex>.addr[.<dc>].<domain>      8 hex digits: IPv4, 32: IPv6
//	ns.<domain>                     the name server named by the apex NS record
//	<domain>                        the apex: SOA and NS
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
