// Package httpapi serves cairn's HTTP API under /v1/, with the paths, JSON
// shapes and headers of Consul's for the same endpoints, so existing clients
// work. Bad input is answered with a 400 and a JSON body naming the field and
// the reason; every error body is JSON.
//
// Handlers reach the servers through the agent's door (Door) with the rpc
// package's own argument and reply types, as Consul's handlers call
// agent.RPC: adding an endpoint touches its handler and the servers'
// method only. What only the agent itself answers comes in one Deps given
// to New: its own services and checks (Local, package agent/local), its
// gossip membership and keyring (Cluster), and optional parts whose nil
// turns their endpoint off (ACL authorizer, ?cached reads, DNS for the UI
// and DNS over HTTPS, metrics, the log stream, stats and reload). Nothing
// is set after New and nothing is found by type assertion. Check
// definitions are decoded and validated here, before the Local sees them.
// Handlers are safe for concurrent use.
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
// parses and changes nothing. The table is written to testdata/routes.json
// (TestRoutesFileIsCurrent) for the agent's test that plays an attacker
// against every route of a real secured agent.
package httpapi
