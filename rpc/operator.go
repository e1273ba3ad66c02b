package rpc

import (
	"fmt"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// This file holds the wire types of the Operator endpoint, which package
// consensus serves: autopilot's configuration and the servers' health as
// the leader sees them, for the agent's /v1/operator/autopilot API, and
// the Raft stats one server asks another for. Like the Catalog's, they
// live here so callers need not import consensus.

// OperatorEndpoint is the name the Operator endpoint is registered under
// on the Server; its methods are called as "Operator.<Method>".
const OperatorEndpoint = "Operator"

// The methods of the Operator endpoint, as Pool.Call names them.
const (
	MethodOperatorAutopilotGetConfiguration = OperatorEndpoint + ".AutopilotGetConfiguration"
	MethodOperatorAutopilotSetConfiguration = OperatorEndpoint + ".AutopilotSetConfiguration"
	MethodOperatorServerHealth              = OperatorEndpoint + ".ServerHealth"
	MethodOperatorRaftRemovePeer            = OperatorEndpoint + ".RaftRemovePeer"
	MethodOperatorRaftTransferLeader        = OperatorEndpoint + ".RaftTransferLeader"
	// MethodOperatorRaftStats is what the leader asks every server of
	// its datacenter for, to judge its health; it is answered by the
	// receiving server itself, never forwarded.
	MethodOperatorRaftStats = OperatorEndpoint + ".RaftStats"
)

// AutopilotConfig is autopilot's configuration, as Consul's
// /v1/operator/autopilot/configuration has it. The servers keep it in
// Raft; each server's autopilot block is only the value the first leader
// stores when none is.
type AutopilotConfig struct {
	// CleanupDeadServers lets the leader remove servers that have failed
	// (for its RemoveFailedServersAfter) from the Raft configuration.
	CleanupDeadServers bool
	// LastContactThreshold is how long a server may go without hearing
	// from the leader and still count as healthy.
	LastContactThreshold time.Duration
	// MaxTrailingLogs is how many log entries a server may trail the
	// leader by and still count as healthy.
	MaxTrailingLogs uint64
	// MinQuorum is the fewest voters dead-server cleanup leaves; 0 leaves
	// the servers' own floor (3).
	MinQuorum uint
	// ServerStabilizationTime is how long a new server must have been
	// healthy before the leader makes it a voter.
	ServerStabilizationTime time.Duration
	// CreateIndex and ModifyIndex are the Raft indexes of the writes that
	// stored the configuration first and last; read-only.
	CreateIndex, ModifyIndex uint64
}

// DefaultAutopilotConfig returns Consul's defaults: cleanup on, 200ms,
// 250 entries, MinQuorum 0, 10s.
func DefaultAutopilotConfig() AutopilotConfig {
	return AutopilotConfig{
		CleanupDeadServers:      true,
		LastContactThreshold:    200 * time.Millisecond,
		MaxTrailingLogs:         250,
		ServerStabilizationTime: 10 * time.Second,
	}
}

// Validate reports the first invalid field as a *catalog.FieldError
// naming it, so that an operator's bad value reaches the HTTP API as a
// 400 through the wire. Zero is valid and means zero, as in Consul (which
// stores what a partial body such as {"CleanupDeadServers": false} leaves
// zero): a LastContactThreshold of 0 counts only the leader as heard from
// in time, a ServerStabilizationTime of 0 promotes a healthy server at once.
func (c AutopilotConfig) Validate() error {
	switch {
	case c.LastContactThreshold < 0:
		return &catalog.FieldError{Field: "LastContactThreshold", Reason: fmt.Sprintf("must not be negative, got %s", c.LastContactThreshold)}
	case c.ServerStabilizationTime < 0:
		return &catalog.FieldError{Field: "ServerStabilizationTime", Reason: fmt.Sprintf("must not be negative, got %s", c.ServerStabilizationTime)}
	}
	return nil
}

// AutopilotGetConfigRequest reads autopilot's configuration: from the
// leader, or with AllowStale from the receiving server. It never blocks.
type AutopilotGetConfigRequest struct {
	QueryOptions
	Forwarded bool
}

// AutopilotConfigResponse holds the configuration; Index (in QueryMeta)
// is its ModifyIndex.
type AutopilotConfigResponse struct {
	QueryMeta
	Config AutopilotConfig
}

// AutopilotSetConfigRequest replaces autopilot's configuration (its
// indexes are ignored). With CAS it is replaced only when its ModifyIndex
// is still Config.ModifyIndex, as Consul's ?cas=.
type AutopilotSetConfigRequest struct {
	WriteRequest
	Config    AutopilotConfig
	CAS       bool
	Forwarded bool
}

// AutopilotSetConfigResponse answers a set: Updated is false only for a
// CAS that found another ModifyIndex.
type AutopilotSetConfigResponse struct {
	Updated bool
}

// ServerHealthRequest asks the leader for the health of the servers of
// its datacenter. It is always answered by the leader (AllowStale and
// MinQueryIndex are ignored), the only server that tracks it.
type ServerHealthRequest struct {
	QueryOptions
	Forwarded bool
}

// ServerHealth is one server's health as the leader judges it.
type ServerHealth struct {
	ID      string // the Raft ID: the node ID (the node name in older data dirs)
	Name    string // the node name
	Address string // the RPC/Raft address
	// SerfStatus is the server's status in LAN gossip: "alive",
	// "failed", "left", or "none" when gossip does not know it.
	SerfStatus string
	Version    string // the server's cairn version, "" when unknown
	Leader     bool
	// LastContact is how long ago the server last heard from the leader
	// (0 for the leader itself); -1 when unknown: the server never heard
	// from one, or could not be asked.
	LastContact time.Duration
	// LastTerm and LastIndex are the term and index of the last entry of
	// the server's Raft log.
	LastTerm, LastIndex uint64
	// StorageError is why the server cannot write its Raft log, stable
	// store or snapshots (a full disk), "" when it can or is not known.
	StorageError string
	// ClockSkew is how far the server's wall clock is ahead of the
	// leader's (negative: behind), as the leader last measured it from
	// RPC replies (0 for the leader itself); ClockSkewKnown is false when
	// it never has. Health does not depend on it: no request compares
	// clocks.
	ClockSkew      time.Duration
	ClockSkewKnown bool
	// Healthy says whether the server is alive in gossip, heard from the
	// leader within LastContactThreshold, has the leader's last term,
	// trails it by at most MaxTrailingLogs entries, and can write its
	// Raft storage.
	Healthy bool
	Voter   bool
	// StableSince is when Healthy last changed (as this leader saw it).
	StableSince time.Time
	// RaftID is the Raft ID the server reports it runs under, "" when
	// unknown; another than ID until the leader re-adds it under it.
	RaftID string
}

// ServerHealthResponse is the health of every server of the Raft
// configuration, sorted by ID.
type ServerHealthResponse struct {
	// Healthy is true when every server is.
	Healthy bool
	// FailureTolerance is how many voters could fail without the rest
	// losing their quorum: the healthy voters beyond a majority of all.
	FailureTolerance int
	Servers          []ServerHealth
}

// RaftStatsRequest asks a server for its own Raft stats. It carries no
// token: the stats say nothing but how current the server is, and only
// members of the datacenter reach the server port.
type RaftStatsRequest struct{}

// RaftStatsResponse is a server's view of its own Raft log.
type RaftStatsResponse struct {
	// ID is the Raft ID the server runs under ("" from servers too old
	// to say).
	ID string
	// LastContact is how long ago the server last heard from the leader:
	// 0 on the leader, -1 when it never did.
	LastContact time.Duration
	// LastTerm and LastIndex are those of the last entry of its log.
	LastTerm, LastIndex uint64
	// Version is the server's cairn version.
	Version string
	// StorageError is why the server cannot write its Raft log, stable
	// store or snapshots, "" when it can (and from servers too old to
	// say).
	StorageError string
}

// RaftRemovePeerRequest removes a server from the Raft configuration, by
// its Raft ID or by its address (exactly one is set), as Consul's DELETE
// /v1/operator/raft/peer: for a server that is gone for good. It is
// carried out by the leader.
type RaftRemovePeerRequest struct {
	WriteRequest
	ID, Address string
	Forwarded   bool
}

// RaftRemovePeerResponse answers RaftRemovePeer once the change is
// committed.
type RaftRemovePeerResponse struct{}

// RaftTransferLeaderRequest asks the leader to hand leadership to the
// voter ID, or to the most current voter when ID is "", as Consul's POST
// /v1/operator/raft/transfer-leader.
type RaftTransferLeaderRequest struct {
	WriteRequest
	ID        string
	Forwarded bool
}

// RaftTransferLeaderResponse answers RaftTransferLeader once another
// server leads.
type RaftTransferLeaderResponse struct {
	Success bool
}
