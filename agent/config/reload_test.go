package config

import (
	"slices"
	"testing"
	"time"
)

// TestRestartOnlyGossipTiming: a changed gossip_lan or gossip_wan is
// reported as a setting that changes only on restart.
func TestRestartOnlyGossipTiming(t *testing.T) {
	t.Parallel()
	running := Default()
	loaded := running
	loaded.GossipLAN.ProbeInterval = 2 * time.Second
	loaded.GossipWAN.GossipNodes = 6
	if got, want := RestartOnly(running, loaded), []string{"GossipLAN", "GossipWAN"}; !slices.Equal(got, want) {
		t.Errorf("restartOnly: got %q, want %q", got, want)
	}
	if got := RestartOnly(running, running); len(got) != 0 {
		t.Errorf("restartOnly of an unchanged config: got %q, want none", got)
	}
}
