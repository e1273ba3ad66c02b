// Package checks runs the health checks of this agent's own services and
// node, and reports what they find.
//
// A [Definition] says what to probe (an HTTP URL, a TCP or UDP address, a
// gRPC health service, a program, another service's health through an
// [AliasSource], or nothing at all for a TTL check the application feeds
// itself) and how results turn into a status. A [Manager] runs the checks
// it is given and tells its [Notifier] when a check's status or output
// changes; it sends edges, not every run, so the anti-entropy syncer above
// it only ever pushes changes.
//
// The package owns probing and the status machine (thresholds, TTL expiry,
// output truncation). It does not own persistence, the catalog, or
// DeregisterCriticalServiceAfter: agent/local keeps the checks, pushes
// their status to the servers, and removes a service whose check has been
// critical too long. It imports only catalog, as DESIGN.md requires.
//
// # Concurrency
//
// Every check runs on its own goroutine, owned by the Manager: Remove and
// Close cancel it and wait for it. Every probe is bounded by the check's
// Timeout through a context (dials, requests, programs), so a target that
// hangs delays only its own check, and Remove or Close cancel a probe in
// flight instead of waiting it out. The Manager's lock is never held while
// probing or while calling the Notifier; Manager methods are safe for
// concurrent use.
//
// # gRPC without grpc-go
//
// The gRPC check speaks grpc.health.v1.Health/Check by hand: one unary
// call is a POST over HTTP/2 carrying a 5-byte length prefix and a
// two-field protobuf message each way, which is far less code than the
// dependency tree of google.golang.org/grpc. The HTTP/2 client is the one
// net/http already links in (Transport.Protocols with UnencryptedHTTP2 for
// plaintext h2c), so the check costs no new module and no binary size.
package checks
