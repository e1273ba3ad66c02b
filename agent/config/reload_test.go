package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChanges: a reload tells the keys it applies from those only a
// restart applies, by the names users write them with.
func TestChanges(t *testing.T) {
	t.Parallel()
	running := Default()
	loaded := running
	loaded.GossipLAN.ProbeInterval = 2 * time.Second
	loaded.GossipWAN.GossipNodes = 6
	loaded.LogLevel = "debug"
	loaded.NodeName = "renamed"
	loaded.LogFile.RotateBytes = 1 << 20
	reloaded, restart := Changes(running, loaded)
	if want := []string{"log_level"}; !slices.Equal(reloaded, want) {
		t.Errorf("reloaded: got %q, want %q", reloaded, want)
	}
	if want := []string{"gossip_lan", "gossip_wan", "log_file/log_rotate_bytes/log_rotate_duration/log_rotate_max_files", "node_name"}; !slices.Equal(restart, want) {
		t.Errorf("restart: got %q, want %q", restart, want)
	}
	if r, s := Changes(running, running); len(r)+len(s) != 0 {
		t.Errorf("changes of an unchanged config: got %q and %q, want none", r, s)
	}
	after := Reloaded(running, loaded)
	if after.LogLevel != "debug" || after.NodeName != running.NodeName || after.LogFile != running.LogFile {
		t.Errorf("Reloaded: got log_level %q, node_name %q, log_file %+v; want the new level only", after.LogLevel, after.NodeName, after.LogFile)
	}
}

// TestReloadKeysNameEveryField: every field of Config is either reloaded
// or restart-only, so that a reload never reports a Go field name, and
// docs/operating/running.md lists each key in the right list.
func TestReloadKeysNameEveryField(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/operating/running.md")
	if err != nil {
		t.Fatal(err)
	}
	reloadSection, restartSection, ok := strings.Cut(string(doc), "### Needs a restart")
	if !ok {
		t.Fatal("docs/operating/running.md: no \"### Needs a restart\" section")
	}
	for f := range reflect.TypeFor[Config]().Fields() {
		_, live := ReloadKeys[f.Name]
		_, restart := RestartKeys[f.Name]
		if live == restart {
			t.Errorf("Config.%s: in ReloadKeys %v, in RestartKeys %v; want exactly one", f.Name, live, restart)
		}
	}
	for _, tc := range []struct {
		keys    map[string]string
		section string
		name    string
	}{{ReloadKeys, reloadSection, "reload"}, {RestartKeys, restartSection, "restart"}} {
		for _, key := range tc.keys {
			first, _, _ := strings.Cut(key, " ")
			if !strings.Contains(tc.section, "`"+first+"`") {
				t.Errorf("docs/operating/running.md: key %q is not in the %s list", first, tc.name)
			}
		}
	}
}
