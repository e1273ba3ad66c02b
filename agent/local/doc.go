// Package local holds what this agent is the authority for: its own node
// and the services registered with it. Services are persisted in the data
// directory, so an acknowledged registration survives a restart, and an
// anti-entropy loop keeps the catalog equal to them: it pushes each change at
// once and runs a full comparison periodically, re-adding what the catalog
// lost and removing what the agent no longer has.
//
// local imports catalog; it reaches the servers only through the Catalog
// interface it declares (the in-process server today, RPC later). State is
// safe for concurrent use.
package local
