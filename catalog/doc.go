// Package catalog owns cairn's data model — nodes, services, checks and the
// service instances DNS answers are built from, prepared queries, ACLs, the
// key/value store with its sessions and locks, and the nodes' network
// coordinates (with the distance between two) — and the state store that
// holds them.
//
// The store is a go-memdb database: every read runs on an immutable snapshot
// and never blocks writers, and every read can register watch channels in a
// WatchSet that close when the data it read changes. Writes carry the Raft
// index they were applied at, so each table knows the index of its last
// change; blocking queries compare against it.
//
// catalog is a leaf: it imports go-memdb and the standard library only. It
// must not import any other cairn package. All Store methods are safe for
// concurrent use; writes are serialised by go-memdb (in a server they come
// from the one goroutine that applies the Raft log).
package catalog
