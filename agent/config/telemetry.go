package config

import (
	"fmt"
	"time"
)

// fileTelemetry is the telemetry block, with Consul's key names.
type fileTelemetry struct {
	PrometheusRetentionTime *string `hcl:"prometheus_retention_time"`
	DisableHostname         *bool   `hcl:"disable_hostname"`
	ConsulAliases           *bool   `hcl:"consul_aliases"`
}

func (f *fileTelemetry) apply(c *Config) error {
	if f.PrometheusRetentionTime != nil {
		d, err := time.ParseDuration(*f.PrometheusRetentionTime)
		if err != nil {
			return &FieldError{Field: "telemetry.prometheus_retention_time", Reason: fmt.Sprintf("%q is not a duration such as \"1m\"", *f.PrometheusRetentionTime)}
		}
		c.Telemetry.PrometheusRetentionTime = d
	}
	setIf(&c.Telemetry.DisableHostname, f.DisableHostname)
	setIf(&c.Telemetry.ConsulAliases, f.ConsulAliases)
	return nil
}
