package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Duration is a time.Duration that travels in JSON as a Go duration
// string ("200ms", "10s"), as Consul's ReadableDuration; a JSON number is
// read as nanoseconds.
type Duration time.Duration

// MarshalJSON writes d as a string such as "200ms".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("invalid duration %s: want a string such as \"10s\" or nanoseconds", b)
	}
	*d = Duration(n)
	return nil
}

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// AutopilotConfiguration is autopilot's configuration, which the servers
// keep in Raft (GET and PUT /v1/operator/autopilot/configuration), in
// Consul's shape.
type AutopilotConfiguration struct {
	// CleanupDeadServers lets the leader remove servers that have been
	// failed for a while from the Raft configuration.
	CleanupDeadServers bool
	// LastContactThreshold is how long a server may go without hearing
	// from the leader and still count as healthy.
	LastContactThreshold Duration
	// MaxTrailingLogs is how many log entries a server may trail the
	// leader by and still count as healthy.
	MaxTrailingLogs uint64
	// MinQuorum is the fewest voters dead-server cleanup leaves; 0 leaves
	// the servers' own floor (3).
	MinQuorum uint
	// ServerStabilizationTime is how long a new server must have been
	// healthy before the leader makes it a voter.
	ServerStabilizationTime Duration
	// CreateIndex and ModifyIndex are the Raft indexes of the writes that
	// stored it first and last. AutopilotCASConfiguration sets only if
	// ModifyIndex is still the stored one.
	CreateIndex uint64
	ModifyIndex uint64
}

// ServerHealth is one server's health as the leader judges it.
type ServerHealth struct {
	// ID is the server's Raft ID; cairn uses the node name.
	ID string
	// Name is the server's node name.
	Name string
	// Address is its RPC (and Raft) address.
	Address string
	// SerfStatus is its status in LAN gossip: "alive", "failed",
	// "left", or "none" when gossip does not know it.
	SerfStatus string
	// Version is its cairn version.
	Version string
	// Leader is true for the leader.
	Leader bool
	// LastContact is how long ago it last heard from the leader; -1 when
	// unknown.
	LastContact Duration
	// LastTerm and LastIndex are those of the last entry of its log.
	LastTerm  uint64
	LastIndex uint64
	// Healthy is whether it counts as healthy under the configuration.
	Healthy bool
	// Voter is false for a non-voter (a new server not yet stable).
	Voter bool
	// StableSince is when Healthy last changed.
	StableSince time.Time
	// ClockSkew is how far its wall clock is ahead of the leader's
	// (negative: behind), as the leader last measured it; nil when it
	// has not.
	ClockSkew *Duration `json:",omitempty"`
	// StorageError is why it cannot write its Raft log, term or
	// snapshots (a full disk, say); "" while it can.
	StorageError string `json:",omitempty"`
}

// OperatorHealthReply is the servers' health (GET
// /v1/operator/autopilot/health).
type OperatorHealthReply struct {
	// Healthy is true when every server is.
	Healthy bool
	// FailureTolerance is how many voters could fail without the others
	// losing their quorum.
	FailureTolerance int
	// Servers are the servers of the Raft configuration, sorted by ID.
	Servers []ServerHealth
}

// AutopilotServer is one server in autopilot's state.
type AutopilotServer struct {
	ID          string
	Name        string
	Address     string
	NodeStatus  string
	Version     string
	LastContact Duration
	LastTerm    uint64
	LastIndex   uint64
	Healthy     bool
	StableSince time.Time
	ReadReplica bool
	// Status is "leader", "voter" or "non-voter".
	Status   string
	Meta     map[string]string
	NodeType string
	// ClockSkew is as ServerHealth's.
	ClockSkew *Duration `json:",omitempty"`
}

// AutopilotState is autopilot's view of the servers (GET
// /v1/operator/autopilot/state), a simplified form of Consul's.
type AutopilotState struct {
	Healthy          bool
	FailureTolerance int
	// OptimisticFailureTolerance is the failure tolerance if every
	// healthy non-voter were a voter.
	OptimisticFailureTolerance int
	// Servers maps each server's ID to its state.
	Servers map[string]AutopilotServer
	// Leader is the leader's ID.
	Leader string
	// Voters are the IDs of the voters.
	Voters []string
}

const autopilotPath = "/v1/operator/autopilot/"

// AutopilotGetConfiguration reads autopilot's configuration from the
// leader (any server with AllowStale).
func (op *Operator) AutopilotGetConfiguration(ctx context.Context, q ...*QueryOptions) (*AutopilotConfiguration, error) {
	var out AutopilotConfiguration
	r := request{method: http.MethodGet, path: autopilotPath + "configuration", query: firstOptions(q).values(nil)}
	if _, err := op.c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AutopilotSetConfiguration replaces autopilot's configuration (its
// indexes aside). A bad value is refused with a *StatusError (400, Field
// naming it).
func (op *Operator) AutopilotSetConfiguration(ctx context.Context, conf *AutopilotConfiguration) error {
	_, err := op.setAutopilot(ctx, conf, nil)
	return err
}

// AutopilotCASConfiguration replaces autopilot's configuration only if
// its ModifyIndex is still conf.ModifyIndex (?cas=), and reports whether
// it did.
func (op *Operator) AutopilotCASConfiguration(ctx context.Context, conf *AutopilotConfiguration) (bool, error) {
	return op.setAutopilot(ctx, conf, url.Values{"cas": {strconv.FormatUint(conf.ModifyIndex, 10)}})
}

func (op *Operator) setAutopilot(ctx context.Context, conf *AutopilotConfiguration, query url.Values) (bool, error) {
	var updated bool
	r := request{method: http.MethodPut, path: autopilotPath + "configuration", query: query, body: conf}
	if _, err := op.c.do(ctx, r, &updated); err != nil {
		return false, err
	}
	return updated, nil
}

// AutopilotServerHealth reads the servers' health as the leader judges
// it. An unhealthy cluster is an answer too (the agent says 429), not an
// error.
func (op *Operator) AutopilotServerHealth(ctx context.Context, q ...*QueryOptions) (*OperatorHealthReply, error) {
	r := request{method: http.MethodGet, path: autopilotPath + "health", query: firstOptions(q).values(nil)}
	req, err := op.c.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := op.c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); errors.Is(ctxErr, context.Canceled) {
			return nil, fmt.Errorf("GET %s: %w", r.path, ctxErr)
		}
		return nil, &UnreachableError{Address: op.c.Address(), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("GET %s: read response: %w", r.path, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
		return nil, decodeStatusError(resp.StatusCode, body)
	}
	var out OperatorHealthReply
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET %s: decode response: %w", r.path, err)
	}
	return &out, nil
}

// AutopilotState reads autopilot's view of the servers.
func (op *Operator) AutopilotState(ctx context.Context, q ...*QueryOptions) (*AutopilotState, error) {
	var out AutopilotState
	r := request{method: http.MethodGet, path: autopilotPath + "state", query: firstOptions(q).values(nil)}
	if _, err := op.c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
