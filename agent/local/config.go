package local

import (
	"errors"
	"fmt"
	"time"
)

// Config describes this agent's node and where its state is kept.
type Config struct {
	NodeName   string            // required
	NodeID     string            // optional
	Address    string            // the node's advertised IP, required
	Datacenter string            // required
	NodeMeta   map[string]string // optional
	// DataDir is where services are persisted (DataDir/services). Empty keeps
	// them in memory only (dev mode).
	DataDir string
	// SyncInterval is the period of the full anti-entropy sync; each run is
	// delayed by up to a quarter of it at random so agents do not sync in
	// step. Default 1 minute.
	SyncInterval time.Duration
	// RetryInterval is how soon a failed push is retried. Default 5 seconds.
	RetryInterval time.Duration
}

// DefaultConfig returns the timing defaults; the node fields must be set.
func DefaultConfig() Config {
	return Config{SyncInterval: time.Minute, RetryInterval: 5 * time.Second}
}

// Validate reports every missing or bad field.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, v string }{
		{"NodeName", c.NodeName}, {"Address", c.Address}, {"Datacenter", c.Datacenter},
	} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("local %s: is required", f.name))
		}
	}
	if c.SyncInterval < time.Second {
		errs = append(errs, fmt.Errorf("local SyncInterval: must be at least 1s, got %s", c.SyncInterval))
	}
	if c.RetryInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("local RetryInterval: must be at least 10ms, got %s", c.RetryInterval))
	}
	return errors.Join(errs...)
}
