// Package consensus replicates the catalog with Raft: it owns the Raft
// instance, its log and snapshot stores on disk (or in memory for -dev), the
// FSM that applies committed commands to the catalog state store, and the
// write path (Register, Deregister) that returns only once a write is
// committed and applied.
//
// consensus imports catalog; it must not import agent, resolver or zones.
// Server methods are safe for concurrent use. The FSM is called by Raft from
// a single goroutine; it never blocks on anything but the state store.
package consensus
