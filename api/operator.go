package api

import (
	"context"
	"net/http"
)

// Operator is the group of /v1/operator endpoints: the datacenter's Raft
// configuration.
type Operator struct{ c *Client }

// RaftServer is one server in the Raft configuration.
type RaftServer struct {
	// ID is the server's Raft ID; cairn uses the node name.
	ID string
	// Node is the server's node name.
	Node string
	// Address is the host:port Raft reaches the server at (its RPC port).
	Address string
	// Leader is true for the current leader.
	Leader bool
	// ProtocolVersion is the Raft protocol version the server speaks.
	ProtocolVersion string
	// Voter is true for a server that votes; a non-voter only replicates.
	Voter bool
}

// RaftConfiguration is the datacenter's Raft configuration.
type RaftConfiguration struct {
	// Servers are the servers in the configuration.
	Servers []*RaftServer
	// Index is the Raft index the configuration was read at; a newer one
	// may still be in flight.
	Index uint64
}

// RaftConfiguration reads the Raft configuration of the agent's datacenter:
// GET /v1/operator/raft/configuration.
func (op *Operator) RaftConfiguration(ctx context.Context) (*RaftConfiguration, error) {
	var out RaftConfiguration
	if _, err := op.c.do(ctx, request{method: http.MethodGet, path: "/v1/operator/raft/configuration"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
