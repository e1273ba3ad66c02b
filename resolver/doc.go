// Package resolver owns cairn's DNS server: the UDP, TCP and DNS over TLS
// listeners and the handler that answers questions about the zone's
// names, which ServeWire also offers to DNS over HTTPS (wire.go).
//
// The handler checks the query (opcode, question count, class, EDNS0
// version), parses the name with the first of its zones (the primary
// domain, then any alternative ones) the name is under, asks a Source for
// the catalog data the name needs, has that zone build the records, and
// turns the result into a reply: the rcode (chosen in one function,
// rcodeFor), the AA bit, a shuffled copy of the answer records, owner
// names spelt as the client spelt the question (0x20), an OPT record
// echoing the client's EDNS0, and truncation to what the client can
// receive over UDP. The reply is packed into a buffer reused between
// replies, to the bytes miekg/dns would pack (pack.go), and written as
// bytes; a record the packer does not know is left to miekg/dns. Nothing
// is logged per query; a panic while answering
// is recovered, answered SERVFAIL and logged (at most once a minute).
// A service question answered from a set the Source keeps returning (a
// cache hit) is served from its reply kept packed beside the memoized
// answer (wirecache.go): a copy, the ID, RD, CD and the name's spelling
// patched, the answers shuffled in place or one of a few rotations
// chosen. It allocates nothing, from a UDP datagram's bytes to the
// reply's (servePacket, wirequery.go). Every other question takes the
// path above, whose bytes the kept replies equal (wirecache_test.go).
// With a signing key (dnssec.go) answers to queries with the DO bit carry
// RRSIGs kept per RRset, and denials are compact NSEC records (RFC 9824).
// UDP is served by cairn's own loop (udp.go): one SO_REUSEPORT socket per
// core on Linux, read and written in batches (recvmmsg, sendmmsg); TCP and
// DNS over TLS by miekg/dns's server.
// Every answer is counted by query type and rcode, and its latency in a
// histogram, with atomic adds into fixed arrays (metrics.go); Metrics
// returns a snapshot, and Collectors reports it to Prometheus at each
// scrape (collector.go).
//
// A question about a name outside cairn's domains is forwarded to the
// configured recursors (recursor.go) when the client set RD, and refused
// otherwise or when none are configured: cairn is never an open
// recursor. A forwarded reply keeps the recursor's rcode (NOERROR or
// NXDOMAIN; a recursor answering anything else is passed over, and when
// all fail the answer is SERVFAIL) and its records in their order, never
// has AA set, and is cut to the client's size like any other reply. RA
// is set on every reply when recursors are configured.
//
// UDP is served by cairn's own loop (udp.go), not miekg/dns's server:
// on Linux one socket per core (Config.UDPSockets) shares the port
// (SO_REUSEPORT), and each socket's reader goroutines read datagrams in
// batches (recvmmsg), answer them in turn and send the replies in one
// call (sendmmsg); a reader is added while all of a socket's are busy,
// so that a query waiting on its Source or a recursor does not stop the
// socket. A datagram is accepted, refused (FORMERR, NOTIMP) or ignored
// as miekg/dns's server did.
//
// Over TCP a connection carries any number of queries, pipelined (RFC
// 7766), and is closed after Config.TCPIdleTimeout without one; at most
// Config.MaxTCPConns are served at once, and Config.MaxTCPConnsPerClient
// from one address, one more being closed as soon as it is accepted
// (tcplimit.go). DNS over TLS (RFC 7858, Config.TLSAddr)
// is the same protocol inside TLS: its connections are served the same
// way and count against the same caps. ServeWire answers a wire-format
// query for DNS over HTTPS (RFC 8484) as a TCP query is answered.
//
// So that the agent cannot be used to flood the address a spoofed UDP
// query names: an ANY question over UDP is answered with one record
// (limits.go); a UDP reply is at most 512 bytes unless the client
// returned a valid DNS cookie of this server's (Config.Cookies,
// cookie.go), the rest cut with TC set so that it asks again over TCP;
// and response-rate limiting (Config.RRL, on by default; rrl.go) caps the
// replies that amplify a client network is sent per second, alike and in
// all, dropping the rest or sending every Slip-th truncated and empty so
// that a real client asks again over TCP, which is never limited. Its
// accounts live in a table of fixed size; with it off the handler does
// not look at it.
//
// resolver imports miekg/dns, zones and catalog only, and golang.org/x/net
// and x/sys for UDP batches and SO_REUSEPORT. It gets its data through
// the Source interface it declares (the agent's cache satisfies it) and
// must not import cache, rpc, consensus or agent.
//
// A Server serves queries concurrently (over UDP, a few reader goroutines
// per socket answer a batch each; over TCP, a goroutine per connection),
// and never modifies the records zones and the Source share with it.
// Start, Shutdown and the address accessors may be called from any
// goroutine.
package resolver
