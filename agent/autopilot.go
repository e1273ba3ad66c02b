package agent

import (
	"context"
	"fmt"

	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/rpc"
)

// The HTTP API's /v1/operator/autopilot/ is served through membership,
// which the API takes as its Cluster and finds to be Autopilot as well.
// Every request goes through the door to a server's Operator endpoint,
// which forwards it to the leader (or to dc) and checks its token.
var _ httpapi.Autopilot = membership{}

// AutopilotConfiguration returns autopilot's configuration of datacenter
// dc ("" for the agent's): the leader's, or with stale any server's.
func (m membership) AutopilotConfiguration(ctx context.Context, dc string, stale bool) (*rpc.AutopilotConfig, error) {
	args := &rpc.AutopilotGetConfigRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: stale}}
	var reply rpc.AutopilotConfigResponse
	if err := m.a.door.RPC(ctx, rpc.MethodOperatorAutopilotGetConfiguration, args, &reply); err != nil {
		return nil, fmt.Errorf("read autopilot configuration: %w", err)
	}
	return &reply.Config, nil
}

// SetAutopilotConfiguration replaces autopilot's configuration of dc, or
// with cas only when its ModifyIndex is still cfg.ModifyIndex, and reports
// whether it did.
func (m membership) SetAutopilotConfiguration(ctx context.Context, dc string, cfg rpc.AutopilotConfig, cas bool) (bool, error) {
	args := &rpc.AutopilotSetConfigRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Config: cfg, CAS: cas}
	var reply rpc.AutopilotSetConfigResponse
	if err := m.a.door.RPC(ctx, rpc.MethodOperatorAutopilotSetConfiguration, args, &reply); err != nil {
		return false, fmt.Errorf("set autopilot configuration: %w", err)
	}
	return reply.Updated, nil
}

// ServerHealth returns the health of the servers of dc as its leader
// judges it.
func (m membership) ServerHealth(ctx context.Context, dc string) (*rpc.ServerHealthResponse, error) {
	args := &rpc.ServerHealthRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc}}
	var reply rpc.ServerHealthResponse
	if err := m.a.door.RPC(ctx, rpc.MethodOperatorServerHealth, args, &reply); err != nil {
		return nil, fmt.Errorf("read server health: %w", err)
	}
	return &reply, nil
}

// autopilotConfig turns the autopilot block into the configuration the
// leader stores when none is stored yet.
func autopilotConfig(c config.Autopilot) rpc.AutopilotConfig {
	return rpc.AutopilotConfig{
		CleanupDeadServers:      c.CleanupDeadServers,
		LastContactThreshold:    c.LastContactThreshold,
		MaxTrailingLogs:         uint64(max(c.MaxTrailingLogs, 0)),
		MinQuorum:               uint(max(c.MinQuorum, 0)),
		ServerStabilizationTime: c.ServerStabilizationTime,
	}
}
