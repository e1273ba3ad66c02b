package config

import (
	"fmt"
	"time"
)

// fileLogKeys are the logging keys of the config file besides log_level,
// with Consul's names.
type fileLogKeys struct {
	LogFile           *string `hcl:"log_file"`
	LogRotateBytes    *int    `hcl:"log_rotate_bytes"`
	LogRotateDuration *string `hcl:"log_rotate_duration"`
	LogRotateMaxFiles *int    `hcl:"log_rotate_max_files"`
	LogJSON           *bool   `hcl:"log_json"`
}

func (f *fileLogKeys) apply(c *Config) error {
	setIf(&c.LogFile.Path, f.LogFile)
	if f.LogRotateBytes != nil {
		c.LogFile.RotateBytes = int64(*f.LogRotateBytes)
	}
	setIf(&c.LogFile.RotateMaxFiles, f.LogRotateMaxFiles)
	setIf(&c.LogJSON, f.LogJSON)
	if f.LogRotateDuration != nil {
		d, err := time.ParseDuration(*f.LogRotateDuration)
		if err != nil {
			return &FieldError{Field: "log_rotate_duration", Reason: fmt.Sprintf("%q is not a duration such as \"24h\"", *f.LogRotateDuration)}
		}
		c.LogFile.RotateDuration = d
	}
	return nil
}

func (c *Config) validateLogging(bad func(field, format string, args ...any)) {
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		bad("log_level", "%s", err)
	}
	l := c.LogFile
	if l.RotateBytes < 0 {
		bad("log_rotate_bytes", "got %d, want 0 (no limit) or more bytes", l.RotateBytes)
	}
	if l.RotateDuration < time.Minute {
		bad("log_rotate_duration", "got %s, want at least 1m", l.RotateDuration)
	}
	if l.RotateMaxFiles < -1 {
		bad("log_rotate_max_files", "got %d, want -1 (keep none), 0 (keep all) or more", l.RotateMaxFiles)
	}
}
