package resolver

import "errors"

// ErrUnknownDatacenter is returned, wrapped, by a Source asked about a
// datacenter it does not know. The resolver answers NXDOMAIN.
var ErrUnknownDatacenter = errors.New("unknown datacenter")

// Reasons a query is answered without a lookup. rcodeFor maps each to its
// rcode.
var (
	errNotImplemented = errors.New("opcode not implemented")     // NOTIMP
	errMalformed      = errors.New("malformed query")            // FORMERR
	errBadVersion     = errors.New("unsupported EDNS version")   // BADVERS
	errRefused        = errors.New("class or type not answered") // REFUSED
	errPanic          = errors.New("panic while answering")      // SERVFAIL
	errRecursion      = errors.New("no recursor answered")       // SERVFAIL
)
