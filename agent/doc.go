// Package agent runs one cairn agent: it builds every component from a
// config.Config (package agent/config), starts them in order, and shuts
// them down in the reverse order. Run blocks until its context ends. It is
// wiring: each job with logic of its own is a package it builds and hands
// what that package needs.
//
// Every agent is a server or a client, decided once in New (role.go), and
// every server runs the same way whatever the size of its datacenter (a
// -dev agent is a server of a datacenter of one, with Raft in memory): the
// rpc server (Raft and RPC on one port), Raft, the endpoints, LAN and WAN
// gossip and the leader loop (server.go). A client runs LAN gossip and a
// pool of connections to the servers (client.go).
//
// Start order: the server or client side, then the agent's local state and
// its anti-entropy (a server bootstrapping alone waits up to 5 s for its
// first sync), then DNS, then the HTTP API. Shutdown: DNS, HTTP, the owned
// loops, the endpoints, gossip (leaving gracefully), RPC, Raft.
//
// The parts: every consumer reaches the servers through one door
// (agent/door: in process on a server, the pool with server selection and
// failover on a client); DNS answers from agent/dnssource; agent/pools
// runs the gossip pools; agent/local keeps this node's services and
// checks; agent/httpapi serves the HTTP API, its handlers calling the door,
// with what only the agent has handed to it at New (http.go).
package agent
