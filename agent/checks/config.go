package checks

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Config tunes a Manager. The zero value is usable: NewManager fills the
// zero fields from DefaultConfig.
type Config struct {
	// EnableScriptChecks allows checks that run programs (Definition.Args).
	// Off by default: anyone who can register a check could otherwise run
	// any program as the agent's user (Consul's -enable-script-checks).
	EnableScriptChecks bool
	// AliasInterval is how often an alias check asks its AliasSource,
	// unless the check sets its own Interval. Default 1s: the source is
	// usually this agent's own state, so polling is cheap, and a second is
	// well inside the time a DNS answer takes to change anyway.
	AliasInterval time.Duration
	// UserAgent is sent by HTTP and gRPC checks, so that a service's logs
	// can tell health probes from traffic. Default "cairn/health-check".
	UserAgent string
	// DockerHost is the Docker Engine API docker checks exec through:
	// unix:///path/to/docker.sock or tcp://host:port (plain HTTP).
	// Default: $DOCKER_HOST, else DefaultDockerHost (as Consul and the
	// docker CLI find the daemon).
	DockerHost string
}

// DefaultConfig returns the defaults described on Config's fields.
func DefaultConfig() Config {
	return Config{
		EnableScriptChecks: false,
		AliasInterval:      time.Second,
		UserAgent:          "cairn/health-check",
	}
}

// Validate reports a Config NewManager cannot use.
func (c Config) Validate() error {
	if c.AliasInterval < 0 {
		return errors.New("checks: AliasInterval must not be negative")
	}
	if c.DockerHost != "" {
		if err := checkDockerHost(c.DockerHost); err != nil {
			return fmt.Errorf("checks: DockerHost %w", err)
		}
	}
	return nil
}

// withDefaults returns c with its zero fields taken from DefaultConfig.
func (c Config) withDefaults() Config {
	def := DefaultConfig()
	if c.AliasInterval == 0 {
		c.AliasInterval = def.AliasInterval
	}
	if c.UserAgent == "" {
		c.UserAgent = def.UserAgent
	}
	if c.DockerHost == "" {
		c.DockerHost = os.Getenv("DOCKER_HOST")
		if checkDockerHost(c.DockerHost) != nil {
			c.DockerHost = DefaultDockerHost
		}
	}
	return c
}
