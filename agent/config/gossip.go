package config

import (
	"fmt"
	"time"
)

// This file holds the gossip_lan and gossip_wan blocks, as Consul's: the
// memberlist timers of the LAN pool (every agent) and of the WAN pool
// (servers) that an operator may tune. The pools' other timers (push/pull
// interval, TCP timeout, how long dead members get gossip, reconnects)
// stay the gossip package's presets.
//
// The defaults are memberlist's LAN and WAN presets, which the gossip
// package's DefaultLANConfig and DefaultWANConfig use. This package may
// not import gossip (DESIGN.md), so they are written out here, and the
// agent's tests check that they are the gossip package's.

// GossipTiming is a gossip_lan or gossip_wan block. Larger values lower
// gossip traffic and CPU at the cost of slower failure detection and
// slower spread of changes; smaller ones the reverse.
type GossipTiming struct {
	// GossipNodes is how many random members each gossip round sends
	// queued messages to (gossip_nodes). Default 3 on the LAN, 4 on the
	// WAN; at least 1.
	GossipNodes int
	// GossipInterval is how often a gossip round runs
	// (gossip_interval). Default 200ms on the LAN, 500ms on the WAN; at
	// least 1ms.
	GossipInterval time.Duration
	// ProbeInterval is how often one random member is probed for
	// failure detection (probe_interval). Default 1s on the LAN, 5s on
	// the WAN; at least 1ms.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for an ack before
	// other members are asked to probe indirectly (probe_timeout); it
	// should be about the 99th percentile of round trips. Default 500ms
	// on the LAN, 3s on the WAN; at least 1ms and shorter than
	// ProbeInterval.
	ProbeTimeout time.Duration
	// RetransmitMult is how many times each message is sent on, times
	// log10(N+1) for N members (retransmit_mult). Default 4; at least 1.
	RetransmitMult int
	// SuspicionMult scales how long a suspect member has to refute the
	// suspicion before it is declared failed: at least SuspicionMult ×
	// max(1, log10(N)) × ProbeInterval (suspicion_mult). With 3 or more,
	// memberlist starts from a longer timeout that shrinks toward that
	// minimum as other members confirm the suspicion; with 1 or 2 it
	// expects no confirmations and uses the minimum at once. Default 4
	// on the LAN, 6 on the WAN; at least 1.
	SuspicionMult int
}

// DefaultGossipLAN returns the gossip_lan defaults documented on
// GossipTiming: memberlist's LAN preset.
func DefaultGossipLAN() GossipTiming {
	return GossipTiming{
		GossipNodes:    3,
		GossipInterval: 200 * time.Millisecond,
		ProbeInterval:  time.Second,
		ProbeTimeout:   500 * time.Millisecond,
		RetransmitMult: 4,
		SuspicionMult:  4,
	}
}

// DefaultGossipWAN returns the gossip_wan defaults documented on
// GossipTiming: memberlist's WAN preset.
func DefaultGossipWAN() GossipTiming {
	return GossipTiming{
		GossipNodes:    4,
		GossipInterval: 500 * time.Millisecond,
		ProbeInterval:  5 * time.Second,
		ProbeTimeout:   3 * time.Second,
		RetransmitMult: 4,
		SuspicionMult:  6,
	}
}

// fileGossipKeys are the keys of this file in a config file.
type fileGossipKeys struct {
	GossipLAN *fileGossipTiming `hcl:"gossip_lan"`
	GossipWAN *fileGossipTiming `hcl:"gossip_wan"`
}

type fileGossipTiming struct {
	GossipNodes    *int    `hcl:"gossip_nodes"`
	GossipInterval *string `hcl:"gossip_interval"`
	ProbeInterval  *string `hcl:"probe_interval"`
	ProbeTimeout   *string `hcl:"probe_timeout"`
	RetransmitMult *int    `hcl:"retransmit_mult"`
	SuspicionMult  *int    `hcl:"suspicion_mult"`
}

// apply sets the keys the file gave onto c.
func (f *fileGossipKeys) apply(c *Config) error {
	if err := f.GossipLAN.apply("gossip_lan", &c.GossipLAN); err != nil {
		return err
	}
	return f.GossipWAN.apply("gossip_wan", &c.GossipWAN)
}

// apply sets the keys of one block, named block, onto t. A nil f (the
// block is absent) changes nothing.
func (f *fileGossipTiming) apply(block string, t *GossipTiming) error {
	if f == nil {
		return nil
	}
	setIf(&t.GossipNodes, f.GossipNodes)
	setIf(&t.RetransmitMult, f.RetransmitMult)
	setIf(&t.SuspicionMult, f.SuspicionMult)
	for _, d := range []durationKey{
		{block + ".gossip_interval", "200ms", f.GossipInterval, &t.GossipInterval},
		{block + ".probe_interval", "1s", f.ProbeInterval, &t.ProbeInterval},
		{block + ".probe_timeout", "500ms", f.ProbeTimeout, &t.ProbeTimeout},
	} {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil {
			return &FieldError{Field: d.key, Reason: fmt.Sprintf("%q is not a duration such as %q", *d.v, d.example)}
		}
		*d.dst = v
	}
	return nil
}

// validateGossip reports the bad fields of the gossip_lan and gossip_wan
// blocks. gossip_wan is checked on clients too, which have no WAN pool:
// a file shared by every agent should fail the same everywhere.
func (c *Config) validateGossip(bad func(field, format string, args ...any)) {
	c.GossipLAN.validate("gossip_lan", bad)
	c.GossipWAN.validate("gossip_wan", bad)
}

func (t GossipTiming) validate(block string, bad func(field, format string, args ...any)) {
	// The gossip package refuses timers under 1ms, and memberlist takes
	// 0 to mean "never" (no probes, no gossip rounds).
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"gossip_interval", t.GossipInterval}, {"probe_interval", t.ProbeInterval}, {"probe_timeout", t.ProbeTimeout}} {
		if d.v < time.Millisecond {
			bad(block+"."+d.key, "must be at least 1ms, got %s", d.v)
		}
	}
	if t.ProbeTimeout >= time.Millisecond && t.ProbeInterval >= time.Millisecond && t.ProbeTimeout >= t.ProbeInterval {
		bad(block+".probe_timeout", "must be shorter than probe_interval (%s), got %s", t.ProbeInterval, t.ProbeTimeout)
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"gossip_nodes", t.GossipNodes}, {"retransmit_mult", t.RetransmitMult}, {"suspicion_mult", t.SuspicionMult}} {
		if n.v < 1 {
			bad(block+"."+n.key, "must be at least 1, got %d", n.v)
		}
	}
}
