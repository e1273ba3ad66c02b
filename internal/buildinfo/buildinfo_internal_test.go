package buildinfo

import (
	"runtime/debug"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	vcs := func(rev, when, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name     string
		bi       debug.BuildInfo
		want     Info
		revision string
	}{
		{"tagged", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"},
			Settings: vcs("fcfdcb7aaaabbbbccccddddeeeeffff000011112", "2026-11-27T22:00:00Z", "false")},
			Info{Version: "0.1.0", Revision: "fcfdcb7aaaabbbbccccddddeeeeffff000011112", Time: time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC), GoVersion: "go1.26.8"},
			"fcfdcb7a"},
		{"after the tag, modified", debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20261128001500-0123456789ab+dirty"},
			Settings: vcs("0123456789abcdef", "2026-11-28T00:15:00Z", "true")},
			Info{Version: "0.1.1-0.20261128001500-0123456789ab", Revision: "0123456789abcdef", Time: time.Date(2026, 11, 28, 0, 15, 0, 0, time.UTC), Dirty: true},
			"01234567-dirty"},
		{"devel without VCS", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, Info{Version: DevVersion}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parse(&tc.bi)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if r := got.shortRevision(); r != tc.revision {
				t.Errorf("got revision %q, want %q", r, tc.revision)
			}
		})
	}
}
