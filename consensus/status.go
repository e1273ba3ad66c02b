package consensus

import (
	"context"
	"errors"

	"github.com/cairndns/cairn/rpc"
)

// Status is the RPC endpoint that reports this server's view of Raft: who
// leads, and which servers make up the cluster. Every server knows both, so
// it answers from its own state: nothing is forwarded to the leader and
// nothing blocks, so it keeps answering without a leader, which is when an
// operator asks.
//
// Register it on an rpc.Server under rpc.StatusEndpoint. Its methods are
// called by the rpc.Server, each on a goroutine of its own (or the
// caller's, through rpc.Server.Call); they never block, so they ignore
// ctx. Their errors reach the caller through rpc.WireError, as the Catalog
// endpoint's.
type Status struct {
	srv        *Server
	datacenter string
}

// NewStatus returns the Status endpoint of s, serving datacenter (a
// request naming another fails with ErrNoPathToDatacenter, as the Catalog
// endpoint's do).
func NewStatus(s *Server, datacenter string) (*Status, error) {
	if datacenter == "" {
		return nil, errors.New("consensus Status: datacenter is required")
	}
	return &Status{srv: s, datacenter: datacenter}, nil
}

// Leader returns the address of the leader this server knows, or "".
func (st *Status) Leader(_ context.Context, args *rpc.StatusRequest, reply *rpc.LeaderResponse) error {
	if err := checkDatacenter(st.datacenter, args.Datacenter); err != nil {
		return err
	}
	reply.Leader = st.srv.Leader()
	return nil
}

// RaftConfiguration returns the latest Raft configuration this server
// knows, sorted by ID, with the leader marked.
func (st *Status) RaftConfiguration(_ context.Context, args *rpc.StatusRequest, reply *rpc.RaftConfigurationResponse) error {
	if err := checkDatacenter(st.datacenter, args.Datacenter); err != nil {
		return err
	}
	conf, err := st.srv.RaftConfiguration()
	if err != nil {
		return err
	}
	*reply = *conf
	return nil
}
