package consensus

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
	"github.com/hashicorp/raft"
)

// RaftRemovePeer removes a server from the Raft configuration by its ID
// or its address, as `consul operator raft remove-peer` does: for a server
// that is gone for good, without waiting for dead-server cleanup. The
// leader carries it out; a server not in the configuration is
// catalog.ErrNotFound. A server still alive in gossip is added back by the
// leader's next reconcile, as Consul's.
func (op *Operator) RaftRemovePeer(ctx context.Context, args *rpc.RaftRemovePeerRequest, reply *rpc.RaftRemovePeerResponse) error {
	c := op.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardDC(ctx, rpc.MethodOperatorRaftRemovePeer, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	switch {
	case args.ID == "" && args.Address == "":
		return &catalog.FieldError{Field: "id", Reason: "give the server's Raft ID (?id=) or its address (?address=)"}
	case args.ID != "" && args.Address != "":
		return &catalog.FieldError{Field: "id", Reason: "give only one of ?id and ?address"}
	}
	if done, err := c.forward(ctx, rpc.MethodOperatorRaftRemovePeer, &args.Forwarded, args, reply, 0); done {
		return err
	}
	if err := op.mayOperate(args.Token, true); err != nil {
		return err
	}
	peers, err := c.srv.Peers()
	if err != nil {
		return err
	}
	for _, p := range peers {
		if args.ID != "" && p.ID == args.ID || args.Address != "" && p.Address == args.Address {
			op.leader.mu.Lock() // not while a reconcile or a promotion changes it
			defer op.leader.mu.Unlock()
			c.srv.logger.Info("removing a raft peer on an operator's request", "peer", p.ID, "addr", p.Address)
			return c.srv.RemoveServer(ctx, p.ID)
		}
	}
	if args.ID != "" {
		return fmt.Errorf("raft peer with ID %q: %w in the raft configuration", args.ID, catalog.ErrNotFound)
	}
	return fmt.Errorf("raft peer at address %q: %w in the raft configuration", args.Address, catalog.ErrNotFound)
}

// RaftTransferLeader hands leadership to the voter args.ID, or with no ID
// to the voter raft picks (the most current), and returns once another
// server leads, as `consul operator raft transfer-leader` does.
func (op *Operator) RaftTransferLeader(ctx context.Context, args *rpc.RaftTransferLeaderRequest, reply *rpc.RaftTransferLeaderResponse) error {
	c := op.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardDC(ctx, rpc.MethodOperatorRaftTransferLeader, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	if !c.srv.IsLeader() {
		// Not c.forward, which takes a change of leader during the call
		// for a failure and would ask the new leader to hand over again.
		if args.Forwarded {
			return fmt.Errorf("%s forwarded to a server that no longer leads: %w", rpc.MethodOperatorRaftTransferLeader, ErrNotLeader)
		}
		leader, err := c.waitLeader(ctx)
		if err != nil {
			return err
		}
		if leader != "" {
			args.Forwarded = true
			return c.pool.Call(ctx, leader, rpc.MethodOperatorRaftTransferLeader, args, reply)
		}
	}
	if err := op.mayOperate(args.Token, true); err != nil {
		return err
	}
	if err := c.srv.TransferLeadership(ctx, args.ID); err != nil {
		return err
	}
	reply.Success = true
	return nil
}

// TransferLeadership hands leadership to the voter id ("" for the one
// raft picks) and returns once this server no longer leads. Only the
// leader can (ErrNotLeader elsewhere). An id that is not another voter of
// the configuration is a *catalog.FieldError.
func (s *Server) TransferLeadership(ctx context.Context, id string) error {
	if !s.IsLeader() {
		return fmt.Errorf("transfer leadership: %w", ErrNotLeader)
	}
	var f raft.Future
	if id == "" {
		f = s.raft.LeadershipTransfer()
	} else {
		conf, err := s.configuration()
		if err != nil {
			return fmt.Errorf("transfer leadership: %w", err)
		}
		addr := ""
		for _, srv := range conf.Servers {
			if string(srv.ID) == id && srv.Suffrage == raft.Voter {
				addr = string(srv.Address)
			}
		}
		switch {
		case id == s.id:
			return &catalog.FieldError{Field: "id", Reason: fmt.Sprintf("%q is the leader already", id)}
		case addr == "":
			return &catalog.FieldError{Field: "id", Reason: fmt.Sprintf("%q is not a voter of the raft configuration", id)}
		}
		f = s.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr))
	}
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				return fmt.Errorf("transfer leadership: %w", raftError(err))
			}
			return fmt.Errorf("transfer leadership to %q: %w", id, err)
		}
	case <-ctx.Done():
		return fmt.Errorf("transfer leadership: %w", ctx.Err())
	}
	s.logger.Info("handed leadership over", "to", id)
	return nil
}
