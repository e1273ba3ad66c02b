// Package httpapi serves cairn's HTTP API under /v1/, with the paths, JSON
// shapes and headers of Consul's for the same endpoints, so existing clients
// work. Bad input is answered with a 400 and a JSON body naming the field and
// the reason; every error body is JSON.
//
// httpapi imports catalog (and rpc for the Raft configuration's wire type,
// agent/checks for check definitions, agent/local for its errors) and
// declares what it needs of the rest of the agent as small interfaces
// (Local, Catalog, Status, Cluster, and optionally CachedCatalog for
// ?cached reads and Metrics for /v1/agent/metrics) that the agent wires.
// Check definitions
// are decoded and validated here, before the Local sees them. Handlers are
// safe for concurrent use.
//
// Before any endpoint, a request whose Host header the agent does not
// answer to (DNS rebinding) and a browser's cross-origin write (CSRF) are
// refused with a 403 (guard.go); a ?filter is bounded in length, nesting
// and parsing work, and refused where it does not apply (filter.go). The
// listener caps connections per client address and in all (listener.go),
// and a request must be read within Config.ReadTimeout.
//
// Every route is registered from one table (routes.go) with what each of
// its methods needs (need.go); the table cannot hold a route without it.
// A request's token is checked against that need (admit) before the
// handler runs, and until then its body reads nothing: a refusal reads,
// parses and changes nothing. Routes exports the table for the test that
// plays an attacker against every route.
package httpapi
