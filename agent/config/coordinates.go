package config

import (
	"fmt"
	"time"
)

// This file holds the keys of network coordinates, with Consul's names:
// whether the agent computes one (disable_coordinates), how often it
// sends it to the servers (sync_coordinate_interval_min), and how the
// leader batches what it receives into Raft (coordinate_update_period,
// coordinate_update_batch_size, coordinate_update_max_batches; Consul
// keeps these three under its internal "consul.coordinate" block, cairn
// at the top level, where tests and large clusters can reach them).

// Coordinates are the coordinate keys.
type Coordinates struct {
	// Disable stops computing this agent's network coordinate in gossip
	// and sending it to the servers (disable_coordinates). ?near then
	// cannot place this node: it sorts last. Default false.
	Disable bool
	// SyncIntervalMin is the shortest period between two sends of this
	// agent's LAN coordinate to the servers
	// (sync_coordinate_interval_min); in clusters past 64 × that many
	// seconds' worth of agents it grows so that the servers receive at
	// most about 64 updates a second, and each wait is jittered up to
	// twice it. The first send comes after half to all of it. Default
	// 10s (Consul's is 15s; 10s keeps a new node placed within a few
	// seconds of 10s); at least 100ms.
	SyncIntervalMin time.Duration
	// UpdatePeriod is how often a leader writes the coordinates it
	// received (coordinate_update_period). Default 5s; at least 10ms.
	UpdatePeriod time.Duration
	// UpdateBatchSize is how many coordinates one Raft entry carries
	// (coordinate_update_batch_size). Default 128.
	UpdateBatchSize int
	// UpdateMaxBatches is how many entries one period may write
	// (coordinate_update_max_batches); updates past BatchSize ×
	// MaxBatches in one period are refused, and sent again later.
	// Default 5.
	UpdateMaxBatches int
}

// DefaultCoordinates returns the defaults documented on Coordinates.
func DefaultCoordinates() Coordinates {
	return Coordinates{SyncIntervalMin: 10 * time.Second, UpdatePeriod: 5 * time.Second, UpdateBatchSize: 128, UpdateMaxBatches: 5}
}

// fileCoordinateKeys are the keys of this file in a config file.
type fileCoordinateKeys struct {
	DisableCoordinates         *bool   `hcl:"disable_coordinates"`
	SyncCoordinateIntervalMin  *string `hcl:"sync_coordinate_interval_min"`
	CoordinateUpdatePeriod     *string `hcl:"coordinate_update_period"`
	CoordinateUpdateBatchSize  *int    `hcl:"coordinate_update_batch_size"`
	CoordinateUpdateMaxBatches *int    `hcl:"coordinate_update_max_batches"`
}

// apply sets the keys the file gave onto c.
func (f *fileCoordinateKeys) apply(c *Config) error {
	setIf(&c.Coordinates.Disable, f.DisableCoordinates)
	setIf(&c.Coordinates.UpdateBatchSize, f.CoordinateUpdateBatchSize)
	setIf(&c.Coordinates.UpdateMaxBatches, f.CoordinateUpdateMaxBatches)
	for _, d := range []durationKey{
		{"sync_coordinate_interval_min", "15s", f.SyncCoordinateIntervalMin, &c.Coordinates.SyncIntervalMin},
		{"coordinate_update_period", "5s", f.CoordinateUpdatePeriod, &c.Coordinates.UpdatePeriod},
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

// validateCoordinates reports the bad fields of this file's keys.
func (c *Config) validateCoordinates(bad func(field, format string, args ...any)) {
	co := c.Coordinates
	if co.SyncIntervalMin < 100*time.Millisecond {
		bad("sync_coordinate_interval_min", "must be at least 100ms, got %s", co.SyncIntervalMin)
	}
	if co.UpdatePeriod < 10*time.Millisecond {
		bad("coordinate_update_period", "must be at least 10ms, got %s", co.UpdatePeriod)
	}
	if co.UpdateBatchSize < 1 {
		bad("coordinate_update_batch_size", "must be at least 1, got %d", co.UpdateBatchSize)
	}
	if co.UpdateMaxBatches < 1 {
		bad("coordinate_update_max_batches", "must be at least 1, got %d", co.UpdateMaxBatches)
	}
}
