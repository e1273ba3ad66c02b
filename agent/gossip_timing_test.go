package agent_test

import (
	"testing"
	"time"

	"github.com/cairndns/cairn/agent"
	"github.com/cairndns/cairn/agent/agenttest"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/gossip"
)

// TestGossipConfigMatchesPresets: the gossip_lan and gossip_wan defaults
// are the gossip package's LAN and WAN presets, so an agent without the
// blocks runs memberlist exactly as before they existed.
func TestGossipConfigMatchesPresets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		got    config.GossipTiming
		preset gossip.Timing
	}{
		{"gossip_lan", config.DefaultGossipLAN(), gossip.DefaultLANConfig().Timing},
		{"gossip_wan", config.DefaultGossipWAN(), gossip.DefaultWANConfig().Timing},
	} {
		want := config.GossipTiming{
			GossipNodes: tc.preset.GossipNodes, GossipInterval: tc.preset.GossipInterval,
			ProbeInterval: tc.preset.ProbeInterval, ProbeTimeout: tc.preset.ProbeTimeout,
			RetransmitMult: tc.preset.RetransmitMult, SuspicionMult: tc.preset.SuspicionMult,
		}
		if tc.got != want {
			t.Errorf("%s defaults: got %+v, want the gossip preset's %+v", tc.name, tc.got, want)
		}
	}
}

// TestGossipBlocksReachMemberlist: a server runs its LAN pool with
// gossip_lan and its WAN pool with gossip_wan, a client its LAN pool
// with gossip_lan; the timers the blocks leave out stay the presets'.
func TestGossipBlocksReachMemberlist(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	cfg.GossipLAN.ProbeInterval, cfg.GossipLAN.SuspicionMult = 700*time.Millisecond, 2
	cfg.GossipWAN.ProbeInterval, cfg.GossipWAN.ProbeTimeout, cfg.GossipWAN.GossipNodes = 3*time.Second, 2*time.Second, 6
	s := agenttest.Start(t, cfg)

	wantLAN := gossip.DefaultLANConfig().Timing
	wantLAN.ProbeInterval, wantLAN.SuspicionMult = 700*time.Millisecond, 2
	wantWAN := gossip.DefaultWANConfig().Timing
	wantWAN.ProbeInterval, wantWAN.ProbeTimeout, wantWAN.GossipNodes = 3*time.Second, 2*time.Second, 6
	lan, wan := agent.GossipTiming(s)
	if lan != wantLAN {
		t.Errorf("server LAN pool: got %+v, want %+v", lan, wantLAN)
	}
	if wan != wantWAN {
		t.Errorf("server WAN pool: got %+v, want %+v", wan, wantWAN)
	}

	ccfg := agenttest.ClientConfig(t, "c1")
	ccfg.GossipLAN.GossipInterval, ccfg.GossipLAN.RetransmitMult = 100*time.Millisecond, 6
	c := agenttest.Start(t, ccfg)
	wantLAN = gossip.DefaultLANConfig().Timing
	wantLAN.GossipInterval, wantLAN.RetransmitMult = 100*time.Millisecond, 6
	lan, wan = agent.GossipTiming(c)
	if lan != wantLAN {
		t.Errorf("client LAN pool: got %+v, want %+v", lan, wantLAN)
	}
	if wan != (gossip.Timing{}) {
		t.Errorf("client WAN pool: got %+v, want none", wan)
	}
}

// TestReloadKeepsGossipTiming: memberlist cannot change its timers while
// it runs, so a reload with another gossip_lan or gossip_wan succeeds and
// keeps the running ones (reload.go logs them as restart-only).
func TestReloadKeepsGossipTiming(t *testing.T) {
	t.Parallel()
	cfg := agenttest.Config(t)
	a := agenttest.Start(t, cfg)
	beforeLAN, beforeWAN := agent.GossipTiming(a)
	a.SetReloading(agent.Reloading{Load: func() (config.Config, error) {
		c := cfg
		c.GossipLAN.ProbeInterval = 2 * time.Second
		c.GossipWAN.SuspicionMult = 8
		return c, nil
	}})
	if err := a.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if lan, wan := agent.GossipTiming(a); lan != beforeLAN || wan != beforeWAN {
		t.Errorf("after a reload: got LAN %+v and WAN %+v, want the running %+v and %+v", lan, wan, beforeLAN, beforeWAN)
	}
	a.SetReloading(agent.Reloading{Load: func() (config.Config, error) {
		c := cfg
		c.GossipLAN.ProbeTimeout = 5 * time.Second
		return c, nil
	}})
	if err := a.Reload(); err == nil {
		t.Error("Reload with gossip_lan.probe_timeout past probe_interval: got nil, want an error")
	}
}
