package rpc

// This file holds the wire types of the Status endpoint, which package
// consensus serves: a server's view of Raft, for the agent's /v1/status
// API and for operators. Like the Catalog's, they live here so callers
// need not import consensus.

// StatusEndpoint is the name the Status endpoint is registered under on the
// Server; its methods are called as "Status.<Method>".
const StatusEndpoint = "Status"

// The methods of the Status endpoint, as Pool.Call names them.
const (
	MethodStatusLeader            = StatusEndpoint + ".Leader"
	MethodStatusRaftConfiguration = StatusEndpoint + ".RaftConfiguration"
)

// StatusRequest is the argument of every Status method. Only
// QueryOptions.Datacenter is used (a request for another datacenter is
// refused, as the Catalog endpoint refuses it); the other options are
// ignored: the answer is always the receiving server's own view, which
// every server has, so nothing is forwarded and nothing blocks.
type StatusRequest struct {
	QueryOptions
}

// LeaderResponse answers Status.Leader.
type LeaderResponse struct {
	// Leader is the leader's RPC address (which is also its Raft
	// address), "" when the server knows of none.
	Leader string
}

// RaftServer is one server of the Raft configuration.
type RaftServer struct {
	ID      string // the Raft server ID: the node ID (the node name in older data dirs)
	Node    string // the node name, "" when the answering server does not know it
	Address string // its RPC/Raft address
	Leader  bool   // whether the answering server believes it leads
	Voter   bool   // false for a non-voter, which replicates but does not vote
}

// RaftConfigurationResponse answers Status.RaftConfiguration with the
// latest configuration the answering server knows (on a follower it may
// trail the leader's by a change in flight).
type RaftConfigurationResponse struct {
	Servers []RaftServer // sorted by ID
	// Index is the Raft index of the log entry that made the
	// configuration, or 0 when the answering server does not know it (a
	// change it has not seen committed yet).
	Index uint64
}
