package agenttest

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/internal/porttest"
)

// FreePort returns a loopback port free for both TCP and UDP, to hand to
// peers before the agent starts, as the server and gossip ports of a
// cluster must be (porttest.Free).
func FreePort(t testing.TB) int {
	t.Helper()
	return porttest.Free(t)
}

// ServerConfig returns the configuration of a server named name
// on 127.0.0.1: its data in a temporary directory, DNS and HTTP on ports
// picked by the system, server and gossip (LAN and WAN) ports free
// (FreePort), expecting expect servers and joining join (gossip
// addresses), retried every 100ms.
func ServerConfig(t testing.TB, name string, expect int, join ...string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.NodeName = name
	cfg.Server = true
	cfg.DataDir = t.TempDir()
	cfg.Ports = config.Ports{Server: FreePort(t), SerfLAN: FreePort(t), SerfWAN: FreePort(t), HTTPS: -1, DNSTLS: -1}
	cfg.BootstrapExpect = expect
	cfg.Join = join
	cfg.RetryInterval = 100 * time.Millisecond
	// A server joining a running cluster votes once autopilot has seen it
	// healthy this long: a second instead of 10s keeps tests short.
	cfg.Autopilot.ServerStabilizationTime = time.Second
	cfg.LogLevel = "warn"
	return cfg
}

// ClientConfig returns the configuration of a client agent named name on
// 127.0.0.1: its data in a temporary directory, DNS, HTTP and gossip on
// ports picked free, joining join (gossip addresses), retried every 100ms.
func ClientConfig(t testing.TB, name string, join ...string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.NodeName = name
	cfg.DataDir = t.TempDir()
	cfg.Ports = config.Ports{SerfLAN: FreePort(t), HTTPS: -1, DNSTLS: -1}
	cfg.Join = join
	cfg.RetryInterval = 100 * time.Millisecond
	cfg.LogLevel = "warn"
	return cfg
}

// Cluster is n servers started by StartCluster, with the
// configuration each was started with.
type Cluster struct {
	Agents  []*agent.Agent
	Configs []config.Config
}

// StartCluster starts n servers named s1…sn with BootstrapExpect n, each
// joining the first one's gossip address. It does not wait for a leader:
// see the agent's /v1/status/leader. Each agent is shut down when the test
// ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	for i := range n {
		cfg := ServerConfig(t, fmt.Sprintf("s%d", i+1), n)
		if i > 0 {
			cfg.Join = []string{c.GossipAddr(0)}
		}
		c.Configs = append(c.Configs, cfg)
		c.Agents = append(c.Agents, Start(t, cfg))
	}
	return c
}

// DatacenterConfigs returns the configurations of n servers of
// datacenter dc named s1…sn, as StartCluster starts them: expecting n,
// each but the first joining the first's LAN gossip address. Set JoinWAN on
// them (see WANAddr) and start them with StartConfigs.
func DatacenterConfigs(t testing.TB, dc string, n int) []config.Config {
	t.Helper()
	var cfgs []config.Config
	for i := range n {
		cfg := ServerConfig(t, fmt.Sprintf("s%d", i+1), n)
		cfg.Datacenter = dc
		if i > 0 {
			cfg.Join = []string{GossipAddr(cfgs[0])}
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

// StartConfigs starts an agent with each of cfgs, in order. Each is shut
// down when the test ends.
func StartConfigs(t testing.TB, cfgs []config.Config) *Cluster {
	t.Helper()
	c := &Cluster{}
	for _, cfg := range cfgs {
		c.Configs = append(c.Configs, cfg)
		c.Agents = append(c.Agents, Start(t, cfg))
	}
	return c
}

// GossipAddr is the LAN gossip address of an agent started with cfg on
// loopback.
func GossipAddr(cfg config.Config) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Ports.SerfLAN))
}

// WANAddr is the WAN gossip address of a server started with cfg on
// loopback, to join its WAN pool.
func WANAddr(cfg config.Config) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Ports.SerfWAN))
}

// RPCAddr is the server address (Raft and RPC) of the i-th agent, as
// /v1/status/leader and /v1/status/peers name it.
func (c *Cluster) RPCAddr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Configs[i].Ports.Server))
}

// GossipAddr is the LAN gossip address of the i-th agent, to join it.
func (c *Cluster) GossipAddr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Configs[i].Ports.SerfLAN))
}
