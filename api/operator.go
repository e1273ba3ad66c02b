package api

import (
	"context"
	"net/http"
	"net/url"
)

// Operator is the group of /v1/operator endpoints: the datacenter's Raft
// configuration.
type Operator struct{ c *Client }

// RaftServer is one server in the Raft configuration.
type RaftServer struct {
	// ID is the server's Raft ID: its node ID (its node name in a data
	// dir from before Raft IDs were node IDs).
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

// RaftRemovePeerByID removes the server of Raft ID id from the Raft
// configuration: DELETE /v1/operator/raft/peer?id=.
func (op *Operator) RaftRemovePeerByID(ctx context.Context, id string) error {
	_, err := op.c.do(ctx, request{method: http.MethodDelete, path: "/v1/operator/raft/peer", query: url.Values{"id": {id}}}, nil)
	return err
}

// RaftRemovePeerByAddress removes the server at address (host:port) from
// the Raft configuration: DELETE /v1/operator/raft/peer?address=.
func (op *Operator) RaftRemovePeerByAddress(ctx context.Context, address string) error {
	_, err := op.c.do(ctx, request{method: http.MethodDelete, path: "/v1/operator/raft/peer", query: url.Values{"address": {address}}}, nil)
	return err
}

// RaftTransferLeader hands leadership to the voter of Raft ID id, or with
// "" to the one Raft picks, and reports whether it moved: POST
// /v1/operator/raft/transfer-leader.
func (op *Operator) RaftTransferLeader(ctx context.Context, id string) (bool, error) {
	var q url.Values
	if id != "" {
		q = url.Values{"id": {id}}
	}
	var out struct{ Success bool }
	if _, err := op.c.do(ctx, request{method: http.MethodPost, path: "/v1/operator/raft/transfer-leader", query: q}, &out); err != nil {
		return false, err
	}
	return out.Success, nil
}
