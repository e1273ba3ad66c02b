package config

import (
	"errors"
	"testing"
	"time"

	"github.com/cairndns/cairn/telemetry"
)

func TestTelemetryBlock(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"t.hcl", `telemetry {
  prometheus_retention_time = "2m"
  disable_hostname = false
  consul_aliases = false
}`},
		{"t.json", `{"telemetry": {"prometheus_retention_time": "2m", "disable_hostname": false, "consul_aliases": false}}`},
	} {
		c := Default()
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := (telemetry.Config{PrometheusRetentionTime: 2 * time.Minute}); c.Telemetry != want {
			t.Errorf("%s: got %+v, want %+v", tc.name, c.Telemetry, want)
		}
	}
	if d := Default().Telemetry; d != telemetry.DefaultConfig() {
		t.Errorf("default: got %+v, want %+v", d, telemetry.DefaultConfig())
	}
	for _, file := range []string{`telemetry { prometheus_retention_time = "soon" }`, `telemetry { prometheus_retention_time = "10ms" }`} {
		c := Default()
		c.Dev = true
		err := LoadFile(writeConfig(t, "bad.hcl", file), &c)
		if err == nil {
			err = c.Validate()
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "telemetry.prometheus_retention_time" {
			t.Errorf("%s: got %v, want an error naming telemetry.prometheus_retention_time", file, err)
		}
	}
}
