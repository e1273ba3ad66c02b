// Package buildinfo tells which cairn this binary is, from what the Go
// toolchain stamped into it, and which protocol versions it speaks.
//
// `go build` in a clone stamps the main module's version from the VCS tag
// of the commit (Go 1.24+: "v0.2.0" at a tag, a pseudo-version after it),
// the revision, its time and whether the tree was modified. A build with
// -buildvcs=false, from a git worktree (which the toolchain does not
// recognize) or from a source tarball gets "(devel)" and no VCS facts:
// then the version is DevVersion and the revision "unknown".
package buildinfo

import (
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// DevVersion is the version of a build the toolchain stamped nothing
// into: the next release, as a prerelease. Raise it right after tagging.
const DevVersion = "0.2.0-dev"

// The cairn protocol: what a peer must speak for gossip, RPC, the change
// feed and Raft to work between two builds. A build speaks Protocol and
// accepts peers whose range [min, max] overlaps [ProtocolMin,
// ProtocolMax]; a peer that gossips no range (v0.1.0 gossips one) is taken
// as speaking only the version it gossips.
//
// The contract (docs/operating/upgrades.md): a release talks to the
// previous minor release in both directions. A release that changes the
// wire in a way the previous one cannot read raises ProtocolMax (and
// Protocol) and keeps ProtocolMin at the previous release's version,
// speaking the old forms to peers that gossip it; the release after drops
// them and raises ProtocolMin. v0.1.0 speaks protocol 1 and nothing since
// has changed the wire: this build still speaks 1 only. (Group commit's
// batch Raft entries, which v0.1.0 cannot read, are written only with
// performance.raft_group_commit (default on) and while every server gossips
// gossip.FeatureBatchedWrites: a feature bit, not a protocol version, as
// they are a choice of the leader's, not a form both sides must speak.)
const (
	Protocol    uint8 = 1
	ProtocolMin uint8 = 1
	ProtocolMax uint8 = 1
)

// Info is what the toolchain stamped into the binary.
type Info struct {
	// Version is the semantic version without its "v" ("0.1.0",
	// "0.1.1-0.20261128001500-0123456789ab"), or DevVersion.
	Version string
	// Revision is the full VCS revision; "" when unknown.
	Revision string
	// Time is the revision's commit time (vcs.time); zero when unknown.
	Time time.Time
	// Dirty says the work tree had changes the revision does not hold.
	Dirty bool
	// GoVersion is the toolchain's version ("go1.26.8").
	GoVersion string
}

var read = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: DevVersion}
	}
	return parse(bi)
})

// parse reads the facts of one build's information.
func parse(bi *debug.BuildInfo) Info {
	info := Info{Version: DevVersion, GoVersion: bi.GoVersion}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		// "+dirty" is said by Dirty; Consul's versions have no "v".
		info.Version = strings.TrimSuffix(strings.TrimPrefix(v, "v"), "+dirty")
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			info.Dirty = s.Value == "true"
		}
	}
	return info
}

// Read returns the binary's build information (read once).
func Read() Info { return read() }

// Version is the binary's semantic version (Info.Version).
func Version() string { return Read().Version }

// Revision is the VCS revision cut to 8 characters, as Consul's
// GitCommit, with "-dirty" when the tree was modified; "unknown" without
// VCS information.
func Revision() string { return Read().shortRevision() }

func (i Info) shortRevision() string {
	if i.Revision == "" {
		return "unknown"
	}
	r := i.Revision[:min(8, len(i.Revision))]
	if i.Dirty {
		r += "-dirty"
	}
	return r
}

// BuildDate is the revision's commit time in RFC 3339 (Consul's
// BuildDate is the commit's too), "" when unknown.
func BuildDate() string {
	if t := Read().Time; !t.IsZero() {
		return t.UTC().Format(time.RFC3339)
	}
	return ""
}

// Build is "<version>:<revision>", as Consul's "build" member tag.
func Build() string { return Version() + ":" + Revision() }
