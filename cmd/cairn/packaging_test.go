package main

import (
	"path/filepath"
	"testing"

	"github.com/cairndns/cairn/agent/config"
)

// TestPackagedConfigs: the config files the .deb and the container image
// install in /etc/cairn.d (build/release/files) load and validate as they
// ship, and the image's as the "-dev" its default command adds.
func TestPackagedConfigs(t *testing.T) {
	for _, tc := range []struct {
		file string
		dev  bool
	}{{"cairn.hcl", false}, {"container.hcl", false}, {"container.hcl", true}} {
		cfg := config.Default()
		cfg.Dev, cfg.Server = tc.dev, tc.dev
		if err := config.LoadFile(filepath.Join("..", "..", "build", "release", "files", tc.file), &cfg); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s (dev %v): %v", tc.file, tc.dev, err)
		}
		if cfg.DataDir != "/var/lib/cairn" {
			t.Errorf("%s: data_dir %q, want /var/lib/cairn (the unit's and the image's writable directory)", tc.file, cfg.DataDir)
		}
	}
}
