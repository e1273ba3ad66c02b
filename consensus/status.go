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
// operator asks. A request naming another datacenter is forwarded to a
// server of that one, as the Catalog endpoint's reads are.
//
// Register it on an rpc.Server under rpc.StatusEndpoint. Its methods are
// called by the rpc.Server, each on a goroutine of its own (or the
// caller's, through rpc.Server.Call); they never block but to forward.
// Their errors reach the caller through rpc.WireError, as the Catalog
// endpoint's.
type Status struct {
	srv        *Server
	datacenter string
	dcs        *Catalog
}

// NewStatus returns the Status endpoint of s, serving datacenter. A
// request naming another is forwarded through dcs (forward_dc.go); with
// dcs nil (tests of a server alone) it fails with ErrNoPathToDatacenter.
func NewStatus(s *Server, datacenter string, dcs *Catalog) (*Status, error) {
	if datacenter == "" {
		return nil, errors.New("consensus Status: datacenter is required")
	}
	return &Status{srv: s, datacenter: datacenter, dcs: dcs}, nil
}

// forward sends a request for another datacenter there; done as
// Catalog.forwardDC's.
func (st *Status) forward(ctx context.Context, method string, args *rpc.StatusRequest, reply any) (bool, error) {
	if st.dcs == nil {
		return false, checkDatacenter(st.datacenter, args.Datacenter)
	}
	ctx, release := st.dcs.requestContext(ctx)
	defer release()
	return st.dcs.forwardDC(ctx, method, args.Datacenter, &args.FromDatacenter, false, args, reply, 0)
}

// Leader returns the address of the leader this server knows, or "".
func (st *Status) Leader(ctx context.Context, args *rpc.StatusRequest, reply *rpc.LeaderResponse) error {
	if done, err := st.forward(ctx, rpc.MethodStatusLeader, args, reply); done || err != nil {
		return err
	}
	reply.Leader = st.srv.Leader()
	return nil
}

// RaftConfiguration returns the latest Raft configuration this server
// knows, sorted by ID, with the leader marked.
func (st *Status) RaftConfiguration(ctx context.Context, args *rpc.StatusRequest, reply *rpc.RaftConfigurationResponse) error {
	if done, err := st.forward(ctx, rpc.MethodStatusRaftConfiguration, args, reply); done || err != nil {
		return err
	}
	conf, err := st.srv.RaftConfiguration()
	if err != nil {
		return err
	}
	*reply = *conf
	return nil
}
