package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairndns/cairn/acl"
	"github.com/cairndns/cairn/catalog"
)

// nodeIDFile keeps a generated node ID across restarts, as Consul's
// <data_dir>/node-id.
const nodeIDFile = "node-id"

// ResolveNodeID returns the node ID an agent of c runs with, lowercase:
// node_id; else the one kept in <data_dir>/node-id; else a new random one,
// written there when there is a data dir (a -dev agent without one gets a
// new ID each run).
func (c Config) ResolveNodeID() (string, error) {
	if c.NodeID != "" {
		return strings.ToLower(c.NodeID), nil // Validate checked it
	}
	path := ""
	if c.DataDir != "" {
		path = filepath.Join(c.DataDir, nodeIDFile)
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			id := strings.TrimSpace(string(b))
			if !catalog.IsQueryID(id) {
				return "", &FieldError{Field: "node_id", Reason: fmt.Sprintf("%s holds %q, not a UUID; fix or delete the file, or set node_id", path, id)}
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
