package config

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestGossipBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file string }{
		{"gossip.hcl", `
gossip_lan {
  gossip_nodes    = 5
  gossip_interval = "100ms"
  probe_interval  = "2s"
  probe_timeout   = "1s"
  retransmit_mult = 3
  suspicion_mult  = 5
}
gossip_wan {
  gossip_nodes    = 6
  gossip_interval = "1s"
  probe_interval  = "10s"
  probe_timeout   = "4s"
  retransmit_mult = 5
  suspicion_mult  = 8
}`},
		{"gossip.json", `{
  "gossip_lan": {"gossip_nodes": 5, "gossip_interval": "100ms", "probe_interval": "2s", "probe_timeout": "1s",
    "retransmit_mult": 3, "suspicion_mult": 5},
  "gossip_wan": {"gossip_nodes": 6, "gossip_interval": "1s", "probe_interval": "10s", "probe_timeout": "4s",
    "retransmit_mult": 5, "suspicion_mult": 8}}`},
	} {
		c := validConfig()
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: Validate: got %v, want valid", tc.name, err)
		}
		want := GossipTiming{GossipNodes: 5, GossipInterval: 100 * time.Millisecond, ProbeInterval: 2 * time.Second,
			ProbeTimeout: time.Second, RetransmitMult: 3, SuspicionMult: 5}
		if c.GossipLAN != want {
			t.Errorf("%s: gossip_lan: got %+v, want %+v", tc.name, c.GossipLAN, want)
		}
		want = GossipTiming{GossipNodes: 6, GossipInterval: time.Second, ProbeInterval: 10 * time.Second,
			ProbeTimeout: 4 * time.Second, RetransmitMult: 5, SuspicionMult: 8}
		if c.GossipWAN != want {
			t.Errorf("%s: gossip_wan: got %+v, want %+v", tc.name, c.GossipWAN, want)
		}
	}
}

// TestGossipBlocksKeepUnsetKeys: a key left out of a block, and a block
// left out of the file, keep the preset's value.
func TestGossipBlocksKeepUnsetKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file string }{
		{"one.hcl", `gossip_lan { probe_interval = "3s" }`},
		{"one.json", `{"gossip_lan": {"probe_interval": "3s"}, "gossip_wan": {}}`},
	} {
		c := validConfig()
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := DefaultGossipLAN()
		want.ProbeInterval = 3 * time.Second
		if c.GossipLAN != want {
			t.Errorf("%s: gossip_lan: got %+v, want %+v", tc.name, c.GossipLAN, want)
		}
		if c.GossipWAN != DefaultGossipWAN() {
			t.Errorf("%s: gossip_wan: got %+v, want the defaults %+v", tc.name, c.GossipWAN, DefaultGossipWAN())
		}
	}
}

func TestGossipBlocksErrorsNameTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, field, msg string }{
		{`gossip_lan { gossip_nodes = 0 }`, "gossip_lan.gossip_nodes", "must be at least 1, got 0"},
		{`gossip_lan { gossip_interval = "0s" }`, "gossip_lan.gossip_interval", "must be at least 1ms, got 0s"},
		{`gossip_lan { gossip_interval = "-1s" }`, "gossip_lan.gossip_interval", "must be at least 1ms, got -1s"},
		{`gossip_lan { gossip_interval = "often" }`, "gossip_lan.gossip_interval", `"often" is not a duration such as "200ms"`},
		{`gossip_lan { probe_interval = "0s" }`, "gossip_lan.probe_interval", "must be at least 1ms, got 0s"},
		{`gossip_lan { probe_timeout = "-5ms" }`, "gossip_lan.probe_timeout", "must be at least 1ms, got -5ms"},
		{`gossip_lan { probe_timeout = "2s" }`, "gossip_lan.probe_timeout", "must be shorter than probe_interval (1s), got 2s"},
		{`gossip_lan { probe_timeout = "1s" }`, "gossip_lan.probe_timeout", "must be shorter than probe_interval (1s), got 1s"},
		{`gossip_lan { probe_interval = "400ms" }`, "gossip_lan.probe_timeout", "must be shorter than probe_interval (400ms), got 500ms"},
		{`gossip_lan { retransmit_mult = 0 }`, "gossip_lan.retransmit_mult", "must be at least 1, got 0"},
		{`gossip_lan { suspicion_mult = 0 }`, "gossip_lan.suspicion_mult", "must be at least 1, got 0"},
		{`gossip_lan { suspicion_mult = -2 }`, "gossip_lan.suspicion_mult", "must be at least 1, got -2"},
		{`gossip_lan { probe_intreval = "2s" }`, "gossip_lan.probe_intreval", "unknown key"},
		{`gossip_wan { gossip_nodes = -1 }`, "gossip_wan.gossip_nodes", "must be at least 1, got -1"},
		{`gossip_wan { gossip_interval = "0s" }`, "gossip_wan.gossip_interval", "must be at least 1ms, got 0s"},
		{`gossip_wan { probe_interval = "3s" }`, "gossip_wan.probe_timeout", "must be shorter than probe_interval (3s), got 3s"},
		{`gossip_wan { probe_timeout = "6s" }`, "gossip_wan.probe_timeout", "must be shorter than probe_interval (5s), got 6s"},
		{`gossip_wan { probe_timeout = "soon" }`, "gossip_wan.probe_timeout", `"soon" is not a duration such as "500ms"`},
		{`gossip_wan { retransmit_mult = 0 }`, "gossip_wan.retransmit_mult", "must be at least 1, got 0"},
		{`gossip_wan { suspicion_mult = 0 }`, "gossip_wan.suspicion_mult", "must be at least 1, got 0"},
		{`{"gossip_wan": {"probe_timeout": "10s"}}`, "gossip_wan.probe_timeout", "must be shorter than probe_interval (5s), got 10s"},
	} {
		name := "bad.hcl"
		if tc.file[0] == '{' {
			name = "bad.json"
		}
		c := validConfig()
		err := LoadFile(writeConfig(t, name, tc.file), &c)
		if err == nil {
			err = c.Validate()
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Reason != tc.msg {
			t.Errorf("%s: got %v, want %s: %s", tc.file, err, tc.field, tc.msg)
		}
		if got := fieldsOf(err); len(got) != 1 {
			t.Errorf("%s: got errors for %q, want one", tc.file, got)
		}
	}
}

// TestGossipSuspicionMultBelowThree: memberlist accepts any multiplier
// of at least 1 (below 3 it expects no confirmations of a suspicion).
func TestGossipSuspicionMultBelowThree(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2} {
		c := validConfig()
		c.GossipLAN.SuspicionMult, c.GossipWAN.SuspicionMult = n, n
		if err := c.Validate(); err != nil {
			t.Errorf("suspicion_mult %d: got %v, want valid", n, err)
		}
	}
}

// TestGossipErrorMessage: the whole message names the block and the key.
func TestGossipErrorMessage(t *testing.T) {
	t.Parallel()
	c := validConfig()
	c.GossipLAN.ProbeTimeout = 2 * time.Second
	err := c.Validate()
	const want = "config gossip_lan.probe_timeout: must be shorter than probe_interval (1s), got 2s"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	c = validConfig()
	c.GossipLAN, c.GossipWAN = GossipTiming{}, GossipTiming{}
	got := fieldsOf(c.Validate())
	slices.Sort(got)
	wantFields := []string{
		"gossip_lan.gossip_interval", "gossip_lan.gossip_nodes", "gossip_lan.probe_interval", "gossip_lan.probe_timeout", "gossip_lan.retransmit_mult", "gossip_lan.suspicion_mult",
		"gossip_wan.gossip_interval", "gossip_wan.gossip_nodes", "gossip_wan.probe_interval", "gossip_wan.probe_timeout", "gossip_wan.retransmit_mult", "gossip_wan.suspicion_mult",
	}
	if !slices.Equal(got, wantFields) {
		t.Errorf("empty blocks: got errors for %q, want %q", got, wantFields)
	}
}
