package local

import (
	"errors"
	"fmt"
	"time"

	"github.com/cairndns/cairn/agent/checks"
)

// Config describes this agent's node and where its state is kept.
type Config struct {
	NodeName   string            // required
	NodeID     string            // optional
	Address    string            // the node's advertised IP, required
	Datacenter string            // required
	NodeMeta   map[string]string // optional
	// TaggedAddresses are the node's addresses by network ("lan",
	// "wan", ...), as Node.TaggedAddresses. Optional.
	TaggedAddresses map[string]string
	// DataDir is where services and checks are persisted (DataDir/services,
	// DataDir/checks). Empty keeps them in memory only (dev mode).
	DataDir string
	// SyncInterval is the period of the full anti-entropy sync in a
	// cluster of up to 128 agents; it grows with the logarithm of the size
	// beyond (ClusterSize), so the servers see a steady rate of syncs
	// however many agents there are. Each run is delayed by up to a quarter
	// of it at random so agents do not sync in step. Default 1 minute.
	SyncInterval time.Duration
	// ClusterSize returns how many agents the cluster has (from gossip);
	// nil counts one.
	ClusterSize func() int
	// RetryInterval is how soon a failed push is retried. Default 5 seconds.
	RetryInterval time.Duration
	// CheckUpdateInterval rate-limits pushes of a check whose output
	// changed but not its status: at most one per interval (a status
	// change is pushed at once). Default 5 minutes, like Consul's
	// check_update_interval; 0 pushes every output change.
	CheckUpdateInterval time.Duration
	// ServerChecks are the IDs of node checks the servers keep themselves
	// (the leader's gossip check): a full sync leaves them alone.
	ServerChecks []string
	// ServerServices are the IDs of services the servers keep themselves
	// (the leader's cairn service on a server's node): a full sync leaves
	// them alone, and the agent refuses to register a service with one.
	ServerServices []string
	// Checks configures the check runners (script checks, alias source).
	Checks checks.Config
}

// DefaultConfig returns the timing defaults; the node fields must be set.
func DefaultConfig() Config {
	return Config{SyncInterval: time.Minute, RetryInterval: 5 * time.Second, CheckUpdateInterval: 5 * time.Minute}
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
	if c.CheckUpdateInterval < 0 {
		errs = append(errs, fmt.Errorf("local CheckUpdateInterval: must not be negative, got %s", c.CheckUpdateInterval))
	}
	return errors.Join(errs...)
}

// syncInterval is SyncInterval scaled to the cluster's size: Consul's
// rule, one more interval for every doubling beyond 128 agents.
func (c Config) syncInterval() time.Duration {
	n := 1
	if c.ClusterSize != nil {
		n = c.ClusterSize()
	}
	scale := 1
	for size := 128; n > size; size *= 2 {
		scale++
	}
	return time.Duration(scale) * c.SyncInterval
}
