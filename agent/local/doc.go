// Package local holds what this agent is the authority for: its own node
// and the services registered with it (through the API, persisted in the
// data directory so an acknowledged registration survives a restart). An
// anti-entropy loop keeps the catalog equal to them: it pushes each change
// at once and runs a full comparison periodically, re-adding what the catalog lost and
// removing what the agent no longer has. On its node it leaves alone only
// what the servers keep there themselves: the node-level checks named in
// Config.ServerChecks (the leader's gossip check) and the services named
// in Config.ServerServices (the leader's cairn service on a server). The
// leader writes nothing else on a node, so the two never undo each
// other's writes.
//
// local imports catalog; it reaches the servers only through the Catalog
// interface it declares, which RPCCatalog makes of the agent's door to
// the servers. State is safe for concurrent use.
package local
