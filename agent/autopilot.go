package agent

import (
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/rpc"
)

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
