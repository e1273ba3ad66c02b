package consensus

import (
	"context"
	"errors"

	"github.com/cairndns/cairn/rpc"
)

// Operator is the RPC endpoint of autopilot, for the agent's
// /v1/operator/autopilot API: its configuration, read (by the leader, or
// with AllowStale by any server) and set (through Raft, by the leader),
// and the health of the servers, which only the leader tracks, so that
// request always goes to it. Requests naming another datacenter go there
// first, as the Catalog endpoint's do, whose routing it shares. Reads need
// operator:read and a set operator:write; the answering server checks.
//
// It also answers RaftStats, the one request servers make of each other
// for autopilot: the receiving server's own view of its log, never
// forwarded and never checked against a token (it reveals no data, and
// only members reach the server port).
//
// Register it on an rpc.Server under rpc.OperatorEndpoint. Its methods
// are called by the rpc.Server, each on a goroutine of its own (or the
// caller's, through rpc.Server.Call), with the caller's ctx, which bounds
// their forwards and writes as the Catalog's methods' are bounded;
// closing the Catalog endpoint ends them too. Their errors reach the
// caller through rpc.WireError, so an invalid configuration reaches it as
// a *catalog.FieldError naming the field.
type Operator struct {
	cat    *Catalog
	leader *Leader
}

// NewOperator returns the Operator endpoint of the server cat serves,
// whose leader duties are l (the health it reports is theirs).
func NewOperator(cat *Catalog, l *Leader) (*Operator, error) {
	if cat == nil || l == nil {
		return nil, errors.New("consensus Operator: a Catalog endpoint and a Leader are required")
	}
	return &Operator{cat: cat, leader: l}, nil
}

// AutopilotGetConfiguration returns autopilot's configuration. It never
// blocks.
func (op *Operator) AutopilotGetConfiguration(ctx context.Context, args *rpc.AutopilotGetConfigRequest, reply *rpc.AutopilotConfigResponse) error {
	c := op.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	args.MinQueryIndex = 0
	if done, err := c.forwardRead(ctx, rpc.MethodOperatorAutopilotGetConfiguration, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := op.mayOperate(args.Token, false); err != nil {
		return err
	}
	cfg := op.leader.autopilotConfig()
	reply.Config = cfg
	reply.Index = max(cfg.ModifyIndex, 1) // never 0, as every read's
	reply.KnownLeader = c.srv.Leader() != ""
	reply.LastContact = c.srv.LastContact()
	return nil
}

// AutopilotSetConfiguration replaces autopilot's configuration, or with
// CAS only when its ModifyIndex is still the one given, and returns once
// the change is applied. An invalid configuration is refused before any
// hop to the leader.
func (op *Operator) AutopilotSetConfiguration(ctx context.Context, args *rpc.AutopilotSetConfigRequest, reply *rpc.AutopilotSetConfigResponse) error {
	c := op.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardDC(ctx, rpc.MethodOperatorAutopilotSetConfiguration, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	cfg := args.Config // its indexes are the FSM's to set
	if err := cfg.Validate(); err != nil {
		return err
	}
	if done, err := c.forward(ctx, rpc.MethodOperatorAutopilotSetConfiguration, &args.Forwarded, args, reply, 0); done {
		return err
	}
	if err := op.mayOperate(args.Token, true); err != nil {
		return err
	}
	updated, err := c.srv.SetAutopilotConfig(ctx, cfg, args.CAS, args.Config.ModifyIndex)
	reply.Updated = updated
	return err
}

// ServerHealth returns the health of the servers as the leader judges it.
// AllowStale and MinQueryIndex are ignored: only the leader knows it.
func (op *Operator) ServerHealth(ctx context.Context, args *rpc.ServerHealthRequest, reply *rpc.ServerHealthResponse) error {
	c := op.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	args.AllowStale, args.MinQueryIndex = false, 0
	if done, err := c.forwardRead(ctx, rpc.MethodOperatorServerHealth, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	if err := op.mayOperate(args.Token, false); err != nil {
		return err
	}
	health, err := op.leader.ServerHealth(ctx)
	if err != nil {
		return err
	}
	*reply = *health
	return nil
}

// RaftStats returns this server's own Raft stats. It never blocks.
func (op *Operator) RaftStats(_ context.Context, _ *rpc.RaftStatsRequest, reply *rpc.RaftStatsResponse) error {
	*reply = *op.cat.srv.raftStats(op.leader.cfg.Version)
	return nil
}

// mayOperate refuses a token without operator:read (or, for write,
// operator:write).
func (op *Operator) mayOperate(token string, write bool) error {
	authz, err := op.cat.authorize(token)
	switch {
	case err != nil || authz == nil:
		return err
	case write && !authz.OperatorWrite():
		return denied("operator", "write", "")
	case !write && !authz.OperatorRead():
		return denied("operator", "read", "")
	}
	return nil
}
