// Package agent runs one cairn agent: it builds every part from a
// config.Config, starts them in order and stops them in reverse. It only
// wires: each job with logic of its own is a package it hands what that
// package needs.
//
// Server or client is decided once, in New (role.go). A server (a -dev
// agent is a server of a datacenter of one, Raft in memory) runs the
// server port, Raft, the endpoints, LAN and WAN gossip and the leader
// duties (server.go); a client runs LAN gossip and the client door
// (client.go).
//
// Start: the role's parts, the local state and its anti-entropy (a server
// bootstrapping alone waits up to 5s for its first sync), DNS, then the
// HTTP API. Shutdown: DNS, HTTP, the owned loops, the endpoints' waits,
// gossip (leaving gracefully), the server port, Raft.
package agent
