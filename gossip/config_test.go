package gossip_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

func TestDefaultConfigs(t *testing.T) {
	lan := gossip.DefaultLANConfig()
	lan.NodeName, lan.Datacenter = "web-1", "dc1"
	if err := lan.Validate(); err != nil {
		t.Errorf("DefaultLANConfig with a name and dc: %v", err)
	}
	if lan.BindPort != 8301 || lan.Role != gossip.RoleClient || lan.Timing.ProbeInterval != time.Second ||
		lan.Timing.ReconnectInterval != 2*time.Second || lan.MemberName() != "web-1" {
		t.Errorf("DefaultLANConfig = %+v; want port 8301, client, 1s probes, 2s reconnects, member name web-1", lan)
	}
	wan := gossip.DefaultWANConfig()
	wan.NodeName, wan.Datacenter, wan.RPCAddr = "s1", "dc2", "10.0.0.1:8300"
	if err := wan.Validate(); err != nil {
		t.Errorf("DefaultWANConfig with a name, dc and RPC address: %v", err)
	}
	if wan.BindPort != 8302 || wan.Role != gossip.RoleServer || wan.Timing.ProbeInterval != 5*time.Second ||
		wan.Timing.ReconnectInterval != 10*time.Second || wan.MemberName() != "s1.dc2" {
		t.Errorf("DefaultWANConfig = %+v; want port 8302, server, 5s probes, 10s reconnects, member name s1.dc2", wan)
	}
}

func TestConfigValidate(t *testing.T) {
	base := func() gossip.Config {
		c := gossip.DefaultLANConfig()
		c.NodeName, c.Datacenter = "web-1", "dc1"
		return c
	}
	for _, tc := range []struct {
		field string
		edit  func(*gossip.Config)
	}{
		{"NodeName", func(c *gossip.Config) { c.NodeName = "" }},
		{"NodeName", func(c *gossip.Config) { c.NodeName = "web.1" }},
		{"NodeName", func(c *gossip.Config) { c.NodeName = strings.Repeat("n", 64) }},
		{"Datacenter", func(c *gossip.Config) { c.Datacenter = "" }},
		{"Datacenter", func(c *gossip.Config) { c.Datacenter = "-dc" }},
		{"Role", func(c *gossip.Config) { c.Role = "witch" }},
		{"Role", func(c *gossip.Config) { c.Pool = gossip.WAN }},
		{"Pool", func(c *gossip.Config) { c.Pool = 7 }},
		{"RPCAddr", func(c *gossip.Config) { c.Role = gossip.RoleServer }},
		{"RPCAddr", func(c *gossip.Config) { c.RPCAddr = "10.0.0.1:8300" }},
		{"RPCAddr", func(c *gossip.Config) { c.Role, c.RPCAddr = gossip.RoleServer, "10.0.0.1" }},
		{"RPCAddr", func(c *gossip.Config) { c.Role, c.RPCAddr = gossip.RoleServer, "10.0.0.1:70000" }},
		{"RPCAddr", func(c *gossip.Config) { c.Role, c.RPCAddr = gossip.RoleServer, "0.0.0.0:8300" }},
		{"RPCAddr", func(c *gossip.Config) { c.Role, c.RPCAddr = gossip.RoleServer, strings.Repeat("h", 300)+":8300" }},
		{"BindAddr", func(c *gossip.Config) { c.BindAddr = "localhost" }},
		{"BindPort", func(c *gossip.Config) { c.BindPort = 65536 }},
		{"AdvertiseAddr", func(c *gossip.Config) { c.AdvertiseAddr = "example.com" }},
		{"AdvertisePort", func(c *gossip.Config) { c.AdvertisePort = -1 }},
		{"ProtocolVersion", func(c *gossip.Config) { c.ProtocolVersion = 0 }},
		{"ProtocolVersion", func(c *gossip.Config) { c.ProtocolVersion = gossip.ProtocolVersionMax + 1 }},
		{"EncryptKey", func(c *gossip.Config) { c.EncryptKey = make([]byte, 15) }},
		{"EncryptKey", func(c *gossip.Config) { c.EncryptKey = make([]byte, 33) }},
		{"RetainDead", func(c *gossip.Config) { c.RetainDead = -time.Second }},
		{"Timing.ProbeInterval", func(c *gossip.Config) { c.Timing.ProbeInterval = 0 }},
		{"Timing.ProbeTimeout", func(c *gossip.Config) { c.Timing.ProbeTimeout = 2 * c.Timing.ProbeInterval }},
		{"Timing.GossipInterval", func(c *gossip.Config) { c.Timing.GossipInterval = 0 }},
		{"Timing.GossipToTheDead", func(c *gossip.Config) { c.Timing.GossipToTheDead = 0 }},
		{"Timing.TCPTimeout", func(c *gossip.Config) { c.Timing.TCPTimeout = 0 }},
		{"Timing.PushPullInterval", func(c *gossip.Config) { c.Timing.PushPullInterval = -1 }},
		{"Timing.ReconnectInterval", func(c *gossip.Config) { c.Timing.ReconnectInterval = -1 }},
		{"Timing.SuspicionMult", func(c *gossip.Config) { c.Timing.SuspicionMult = 0 }},
		{"Timing.GossipNodes", func(c *gossip.Config) { c.Timing.GossipNodes = 0 }},
	} {
		c := base()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "gossip "+tc.field+":") {
			t.Errorf("config %+v: Validate() = %v; want an error naming %s", c, err, tc.field)
		}
	}
	for _, key := range [][]byte{make([]byte, 16), make([]byte, 24), make([]byte, 32)} {
		c := base()
		c.EncryptKey = key
		if err := c.Validate(); err != nil {
			t.Errorf("%d-byte EncryptKey: %v", len(key), err)
		}
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	if p, err := gossip.New(gossip.Config{}, nil); err == nil {
		_ = p.Shutdown()
		t.Fatal("New(Config{}): no error")
	}
}

// TestPoolRunsWithItsTiming: the timers a pool is configured with are
// the ones its memberlist runs with, on either preset.
func TestPoolRunsWithItsTiming(t *testing.T) {
	t.Parallel()
	for _, cfg := range []gossip.Config{
		gossiptest.LANConfig("c1", "dc1", gossip.RoleClient),
		gossiptest.WANConfig("s1", "dc1"),
	} {
		cfg.Timing.ProbeInterval, cfg.Timing.ProbeTimeout = 700*time.Millisecond, 300*time.Millisecond
		cfg.Timing.GossipNodes, cfg.Timing.SuspicionMult = 5, 2
		p := gossiptest.Start(t, cfg)
		if got := p.Timing(); got != cfg.Timing {
			t.Errorf("%s pool: Timing() got %+v, want %+v", cfg.Pool, got, cfg.Timing)
		}
	}
}
