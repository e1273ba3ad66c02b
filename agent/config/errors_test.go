package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestConfigValueErrors: every refused value, found while reading the
// file or while validating the whole, is told with its key, the value as
// written and what the key takes: what an operator needs to fix it, at
// start and on reload alike (both load and validate the same way).
func TestConfigValueErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          []string // key, value, expectation
	}{
		{"string-for-int.hcl", `ports { dns = "fifty" }`, []string{"ports.dns", `"fifty"`, "a whole number"}},
		{"string-for-int.json", `{"dns_config": {"udp_answer_limit": "fifty"}}`, []string{"dns_config.udp_answer_limit", `"fifty"`, "a whole number"}},
		{"list-for-string.hcl", `datacenter = ["dc1"]`, []string{"datacenter", "a list", "a string"}},
		{"list-for-string.json", `{"log_level": ["info"]}`, []string{"log_level", "a list", "a string"}},
		{"object-for-bool.hcl", `server = { on = true }`, []string{"server", "a block", "true or false"}},
		{"object-for-bool.json", `{"log_json": {"on": true}}`, []string{"log_json", "a block", "true or false"}},
		{"object-for-int.json", `{"ports": {"dns": {"udp": 53}}}`, []string{"ports.dns", "a block", "a whole number"}},
		{"string-for-bool.json", `{"acl": {"enabled": "yes"}}`, []string{"acl.enabled", `"yes"`, "true or false"}},
		{"number-for-list.hcl", `retry_join = 5`, []string{"retry_join", "5", "a list"}},
		{"string-for-block.hcl", `limits = "none"`, []string{"limits", `"none"`, "a block"}},
		{"float-for-int.hcl", `bootstrap_expect = 2.5`, []string{"bootstrap_expect", "2.5", "a whole number"}},
		{"bad-duration.hcl", `retry_interval = "soon"`, []string{"retry_interval", `"soon"`, "a duration"}},
		{"bad-duration-nested.json", `{"dns_config": {"max_stale": "forever"}}`, []string{"dns_config.max_stale", `"forever"`, "a duration"}},
		{"number-duration.hcl", `log_rotate_duration = 5`, []string{"log_rotate_duration", `"5"`, "a duration"}},
		{"negative-port.hcl", `ports { dns = -5 }`, []string{"ports.dns", "-5", "between 0 and 65535"}},
		{"port-too-big.json", `{"ports": {"server": 70000}}`, []string{"ports.server", "70000", "between 0 and 65535"}},
		{"negative-bytes.hcl", `log_rotate_bytes = -1`, []string{"log_rotate_bytes", "-1", "0 (no limit) or more"}},
		{"short-rotation.hcl", `log_rotate_duration = "1s"`, []string{"log_rotate_duration", "1s", "at least 1m"}},
		{"max-files.hcl", `log_rotate_max_files = -3`, []string{"log_rotate_max_files", "-3", "-1 (keep none)"}},
		{"bad-level.hcl", `log_level = "loud"`, []string{"log_level", `"loud"`, "debug, info, warn, error"}},
		{"bad-ip.hcl", `bind_addr = "nowhere"`, []string{"bind_addr", `"nowhere"`, "IP address"}},
		{"check-number-interval.hcl", "service {\n  name = \"web\"\n  check {\n    tcp = \"127.0.0.1:80\"\n    interval = 5\n  }\n}\n",
			[]string{"service[0].check.interval", `"5"`, "a number and a unit"}},
		{"check-number-interval.json", `{"services": [{"name": "web", "checks": [{"tcp": "127.0.0.1:80", "interval": 10}]}]}`,
			[]string{"services[0].checks[0].interval", `"10"`, "a number and a unit"}},
		{"service-port-word.json", `{"service": {"name": "web", "port": "http"}}`, []string{"service.port", `"http"`, "a whole number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.name, tc.content)
			c := Default()
			c.Dev = true
			err := LoadFile(path, &c)
			if err == nil {
				c.Normalize()
				err = c.Validate()
			}
			if err == nil {
				t.Fatalf("got no error, want one naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestLoadPathDirectory: a directory is read as Consul's -config-dir: its
// .hcl and .json files in name order (a later one's key wins, services
// add up), other files and subdirectories left alone; an error names the
// file and leaves the configuration as it was.
func TestLoadPathDirectory(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"10-base.hcl":  "datacenter = \"dca\"\nlog_level = \"debug\"\nservice { name = \"a\" }\n",
		"20-over.json": `{"datacenter": "dcb", "service": {"name": "b"}}`,
		"30-skip.txt":  `datacenter = "txt"`,
		"README":       "not a config file",
		"sub/40.hcl":   `datacenter = "sub"`,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := Default()
	if err := LoadPath(dir, &c); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Services {
		names = append(names, s.Service.Service)
	}
	if c.Datacenter != "dcb" || c.LogLevel != "debug" || !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("got datacenter %q, log_level %q, services %q; want dcb, debug, [a b]", c.Datacenter, c.LogLevel, names)
	}

	bad := filepath.Join(dir, "25-bad.hcl")
	if err := os.WriteFile(bad, []byte(`ports { dns = "fifty" }`), 0o600); err != nil {
		t.Fatal(err)
	}
	c = Default()
	err := LoadPath(dir, &c)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "ports.dns") {
		t.Errorf("got %v, want an error naming %s and ports.dns", err, bad)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("after the error: got %+v, want the configuration unchanged", c)
	}
	if err := LoadPath(filepath.Join(dir, "missing"), &c); err == nil {
		t.Error("a missing directory: got no error")
	}
}
