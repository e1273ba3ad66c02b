package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/agent/config"
	"github.com/cairndns/cairn/catalog"
)

// nodeIDFile is the file in the data dir that keeps a generated node ID
// across restarts, as Consul's <data_dir>/node-id.
const nodeIDFile = "node-id"

// resolveNodeID returns this agent's node ID, lowercase: the configured
// node_id; else the one kept in <data_dir>/node-id; else a new random one,
// written there when there is a data dir (a -dev agent without one gets a
// new ID each run).
func resolveNodeID(cfg config.Config) (string, error) {
	if cfg.NodeID != "" {
		return strings.ToLower(cfg.NodeID), nil // Validate checked it
	}
	path := ""
	if cfg.DataDir != "" {
		path = filepath.Join(cfg.DataDir, nodeIDFile)
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			id := strings.TrimSpace(string(b))
			if !catalog.IsQueryID(id) {
				return "", &config.FieldError{Field: "node_id", Reason: fmt.Sprintf("%s holds %q, not a UUID; fix or delete the file, or set node_id", path, id)}
			}
			return strings.ToLower(id), nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("read node ID: %w", err)
		}
	}
	id, err := acl.NewID()
	if err != nil {
		return "", fmt.Errorf("generate node ID: %w", err)
	}
	if path != "" {
		if err := os.WriteFile(path, []byte(id), 0o600); err != nil {
			return "", fmt.Errorf("write node ID: %w", err)
		}
	}
	return id, nil
}

// NodeID is this agent's node ID (a UUID).
func (a *Agent) NodeID() string { return a.cfg.NodeID }

// agentBuild is this agent's build as Consul's "build" member tag has it:
// "<version>:<revision>", the revision cut to 8 characters as Consul's
// GitCommit, and "unknown" without VCS information.
func agentBuild() string {
	rev := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				rev = s.Value[:min(8, len(s.Value))]
			}
		}
	}
	return agentVersion() + ":" + rev
}

// agentVersion is the version GET /v1/agent/self reports: the main
// module's, as the Go toolchain stamped it into the binary ("(devel)" for
// a build from a work tree).
func agentVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}
