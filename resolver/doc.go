// Package resolver owns cairn's DNS server: the UDP and TCP listeners and
// the handler that answers questions about the zone's names.
//
// The handler checks the query (opcode, question count, class, EDNS0
// version), parses the name with zones, asks a Source for the catalog data
// the name needs, has zones build the records, and turns the result into a
// reply: the rcode (chosen in one function, rcodeFor), the AA bit, a
// shuffled copy of the answer records, an OPT record echoing the client's
// EDNS0, and truncation to what the client can receive over UDP. Nothing
// is logged per query; a panic while answering is recovered, answered
// SERVFAIL and logged (at most once a minute).
//
// resolver imports miekg/dns, zones and catalog only. It gets its data
// through the Source interface it declares (the agent's cache satisfies
// it) and must not import cache, rpc, consensus or agent.
//
// A Server serves queries concurrently, each on its own goroutine, and
// never modifies the records zones and the Source share with it. Start,
// Shutdown and the address accessors may be called from any goroutine.
package resolver
