// Package consensus replicates the catalog with Raft: it owns the Raft
// instance, its log and snapshot stores on disk (or in memory for -dev), the
// FSM that applies committed commands to the catalog state store, and the
// write path (Register, Deregister) that returns only once a write is
// committed and applied.
//
// Servers of a cluster talk Raft over the rpc server's port (Config.Layer);
// a cluster is formed by BootstrapCluster from a known list of servers, and
// grown or shrunk by the leader with AddVoter and RemoveServer. Leadership
// changes are signalled level-triggered by LeadershipChanged.
//
// The Catalog RPC endpoint serves catalog reads and writes to agents,
// forwarding writes (and reads that need it) to the leader, requests for
// another datacenter to a live server of that datacenter (found by the
// Router, which follows the WAN gossip pool), and holding blocking queries
// on state-store watches; the Status RPC endpoint reports
// this server's view of Raft (the leader, the configuration). Their
// methods take the caller's context (rpc.Server passes it, over the port or
// in process through rpc.Server.Call), which bounds what a request waits
// for: a blocking query, a forward, a Raft apply. The rpc.Server returns
// their errors through rpc.WireError, so a field error or a sentinel
// reaches the caller, even through a forward. The Leader runs the leader's
// duties: it reconciles gossip membership into node health checks and the
// Raft configuration, and runs the session TTL timers (session_ttl.go),
// destroying through Raft a session not renewed in time. The KVS and
// Session endpoints serve the key/value store and its sessions and locks.
// The Keyring endpoint runs a gossip keyring operation on every pool the
// key is in: the WAN pool, this datacenter's LAN pool, and, through a
// server of each, every other datacenter's.
//
// consensus imports catalog, gossip and rpc; it must not import agent,
// resolver or zones.
//
// Server methods are safe for concurrent use. The FSM is called by Raft from
// a single goroutine; it never blocks on anything but the state store.
package consensus
