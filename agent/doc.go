// Package agent runs one cairn agent: it builds every component from a
// config.Config (package agent/config), starts them in order, and shuts them down in the reverse order.
// Run blocks until its context ends.
//
// Every agent is a server or a client, and every server runs the same way
// whatever the size of its datacenter (a -dev agent is a server of a
// datacenter of one, with Raft in memory): the rpc server (Raft and RPC on
// one port), Raft, the endpoints, LAN and WAN gossip and the leader loop.
// A client runs LAN gossip and a pool of connections to the servers.
//
// Start order: the server or client side (server.go, client.go), then the
// agent's local state and its anti-entropy (a server bootstrapping alone
// waits up to 5 s for its first sync), then DNS, then the HTTP API. Shutdown: DNS,
// HTTP, the owned loops, the endpoints, gossip (leaving gracefully), RPC,
// Raft.
//
// Every consumer reaches the servers through one door (door.go): a
// server's endpoints called in process on a server, the pool with failover
// on a client. The HTTP API's handlers call it themselves (http.go wires
// what only the agent answers); one file connects each other consumer to
// it: the DNS cache (dnscache.go), anti-entropy (antientropy.go) and
// membership (membership.go). What happens when a client's server dies is
// the client side of the door.
package agent
