// Package buildinfo tells which cairn this binary is, from what the Go
// toolchain stamped into it.
package buildinfo

import "runtime/debug"

// Version is the main module's version ("(devel)" for a build from a work
// tree, "unknown" without build information).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// Revision is the VCS revision cut to 8 characters, as Consul's
// GitCommit; "unknown" without VCS information.
func Revision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value[:min(8, len(s.Value))]
			}
		}
	}
	return "unknown"
}

// Build is "<version>:<revision>", as Consul's "build" member tag.
func Build() string { return Version() + ":" + Revision() }
