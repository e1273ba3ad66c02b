package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/config"
	"github.com/urfave/cli/v2"
)

// configFromArgs runs "cairn agent args…" with the agent's action replaced
// by one that only builds the configuration.
func configFromArgs(t *testing.T, args ...string) (config.Config, error) {
	t.Helper()
	app := newApp(io.Discard, io.Discard)
	var (
		cfg    config.Config
		cfgErr error
		ran    bool
	)
	for _, cmd := range app.Commands {
		if cmd.Name == "agent" {
			cmd.Action = func(c *cli.Context) error {
				ran = true
				cfg, cfgErr = agentConfig(c)
				return nil
			}
		}
	}
	if err := app.Run(append([]string{"cairn", "agent"}, args...)); err != nil {
		t.Fatalf("cairn agent %v: %v", args, err)
	}
	if !ran {
		t.Fatalf("cairn agent %v: the action did not run", args)
	}
	return cfg, cfgErr
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAgentConfigDefaults(t *testing.T) {
	got, err := configFromArgs(t, "-dev")
	if err != nil {
		t.Fatalf("-dev: %v", err)
	}
	want := config.Default()
	want.Dev, want.Server = true, true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("-dev: got %+v, want %+v", got, want)
	}

	got, err = configFromArgs(t, "-data-dir", "/var/lib/cairn")
	if err != nil {
		t.Fatalf("-data-dir: %v", err)
	}
	want = config.Default()
	want.DataDir = "/var/lib/cairn"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("-data-dir: got %+v, want %+v", got, want)
	}
}

const hclConfig = `
datacenter = "dc2"
domain     = "corp."
data_dir   = "/data/file"
server     = true
log_level  = "debug"
ports {
  dns  = 5353
  http = 9500
}
`

func TestAgentConfigFile(t *testing.T) {
	for name, content := range map[string]string{
		"cairn.hcl": hclConfig,
		"cairn.json": `{"datacenter": "dc2", "domain": "corp.", "data_dir": "/data/file", "server": true,
			"log_level": "debug", "ports": {"dns": 5353, "http": 9500}}`,
	} {
		got, err := configFromArgs(t, "-config-file", writeFile(t, name, content))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := config.Default()
		want.Datacenter, want.Domain, want.DataDir, want.Server, want.LogLevel = "dc2", "corp.", "/data/file", true, "debug"
		want.Ports.DNS, want.Ports.HTTP = 5353, 9500
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

func TestAgentConfigFlagsWinOverFile(t *testing.T) {
	path := writeFile(t, "cairn.hcl", hclConfig)
	got, err := configFromArgs(t, "-config-file", path,
		"-datacenter", "dc3", "-http-port", "0", "-server=false", "-node", "n7",
		"-bind", "10.0.0.7", "-advertise", "10.0.0.8", "-client", "0.0.0.0", "-log-level", "warn",
		"-alt-domain", "consul.", "-recursor", "10.0.0.53", "-recursor", "10.0.0.54:5353", "-node-meta", "rack=r1",
		"-node-id", "adf4238a-882b-9ddc-4a9d-5b6758e4159e")
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default()
	want.AltDomain, want.Resolver.Recursors = "consul.", []string{"10.0.0.53", "10.0.0.54:5353"}
	want.NodeMeta = map[string]string{"rack": "r1"}
	want.Datacenter, want.Domain, want.DataDir, want.Server, want.LogLevel = "dc3", "corp.", "/data/file", false, "warn"
	want.NodeName, want.BindAddr, want.AdvertiseAddr, want.ClientAddr = "n7", "10.0.0.7", "10.0.0.8", "0.0.0.0"
	want.NodeID = "adf4238a-882b-9ddc-4a9d-5b6758e4159e"
	want.Ports.DNS, want.Ports.HTTP = 5353, 0 // -http-port 0 wins although it is the zero value
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestAgentConfigDevIsAlwaysServer(t *testing.T) {
	path := writeFile(t, "cairn.hcl", "server = false\n")
	got, err := configFromArgs(t, "-dev", "-config-file", path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Dev || !got.Server {
		t.Errorf("-dev with a file saying server = false: got Dev %v, Server %v, want both true", got.Dev, got.Server)
	}
	if _, err := configFromArgs(t, "-dev", "-server=false"); err == nil || !strings.Contains(err.Error(), "-server=false") {
		t.Errorf("-dev -server=false: got error %v, want one naming -server=false", err)
	}
}

func TestAgentConfigClusterFlags(t *testing.T) {
	key := "MDEyMzQ1Njc4OWFiY2RlZg=="
	cfg, err := configFromArgs(t, "-server", "-data-dir", "/d", "-bootstrap-expect", "3",
		"-join", "10.0.0.1", "-retry-join", "10.0.0.2:9301", "-retry-interval", "5s", "-retry-max", "4",
		"-serf-lan-port", "9301", "-server-port", "9300", "-encrypt", key,
		"-serf-wan-port", "9302", "-join-wan", "10.1.0.1", "-retry-join-wan", "10.1.0.2:9302")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BootstrapExpect != 3 || !slices.Equal(cfg.Join, []string{"10.0.0.1", "10.0.0.2:9301"}) ||
		cfg.RetryInterval != 5*time.Second || cfg.RetryMax != 4 || cfg.Ports.SerfLAN != 9301 ||
		cfg.Ports.Server != 9300 || cfg.EncryptKey != key ||
		cfg.Ports.SerfWAN != 9302 || !slices.Equal(cfg.JoinWAN, []string{"10.1.0.1", "10.1.0.2:9302"}) {
		t.Errorf("got %+v, want the cluster flags applied", cfg)
	}
	def, err := configFromArgs(t, "-data-dir", "/d")
	if err != nil {
		t.Fatal(err)
	}
	if def.BootstrapExpect != 0 || def.Join != nil || def.RetryInterval != 30*time.Second || def.Ports.SerfLAN != 8301 || def.Ports.SerfWAN != 8302 || def.JoinWAN != nil {
		t.Errorf("got %+v, want the clustering defaults", def)
	}
}

func TestAgentConfigErrors(t *testing.T) {
	badDC := writeFile(t, "bad.hcl", "datacenter = \"dc_2\"\ndata_dir = \"/d\"\n")
	typo := writeFile(t, "typo.hcl", "data_dri = \"/d\"\n")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"-data-dir: is required"}},
		{[]string{"-dev", "-dns-port", "70000"}, []string{"-dns-port: ", "70000"}},
		{[]string{"-dev", "-http-port", "-2"}, []string{"-http-port: ", "-2"}},
		{[]string{"-dev", "-https-port", "8501"}, []string{"-https-port: ", "cert_file"}},
		{[]string{"-dev", "-datacenter", "dc_1"}, []string{"-datacenter: ", "dc_1"}},
		{[]string{"-dev", "-node", "a.b"}, []string{"-node: ", "a.b"}},
		{[]string{"-dev", "-node-id", "web-1"}, []string{"-node-id: ", "web-1", "UUID"}},
		{[]string{"-dev", "-domain", "bad..domain"}, []string{"-domain: "}},
		{[]string{"-dev", "-bind", "nowhere"}, []string{"-bind: ", "nowhere"}},
		{[]string{"-dev", "-advertise", "0.0.0.0"}, []string{"-advertise: "}},
		{[]string{"-dev", "-client", "::x"}, []string{"-client: "}},
		{[]string{"-dev", "-log-level", "loud"}, []string{"-log-level: ", "loud"}},
		{[]string{"-dev", "-dns-port", "70000", "-log-level", "loud"}, []string{"-dns-port: ", "-log-level: "}},
		{[]string{"-config-file", badDC}, []string{"datacenter", badDC, "-datacenter", "dc_2"}},
		{[]string{"-config-file", typo}, []string{"data_dri", "unknown key"}},
		{[]string{"-data-dir", "/d", "-bootstrap-expect", "3"}, []string{"-bootstrap-expect: ", "-server"}},
		{[]string{"-data-dir", "/d", "-retry-interval", "0s"}, []string{"-retry-interval: "}},
		{[]string{"-data-dir", "/d", "-retry-max", "-1"}, []string{"-retry-max: "}},
		{[]string{"-data-dir", "/d", "-serf-lan-port", "70000"}, []string{"-serf-lan-port: ", "70000"}},
		{[]string{"-data-dir", "/d", "-server-port", "70000"}, []string{"-server-port: ", "70000"}},
		{[]string{"-data-dir", "/d", "-encrypt", "c2hvcnQ="}, []string{"-encrypt: ", "16, 24 or 32"}},
		{[]string{"-dev", "-join", "10.0.0.1"}, []string{"-join: ", "-dev"}},
		{[]string{"-data-dir", "/d", "-join-wan", "10.0.0.1"}, []string{"-join-wan: ", "-server"}},
		{[]string{"-data-dir", "/d", "-server", "-retry-join-wan", ""}, []string{"-join-wan: ", "empty"}},
		{[]string{"-data-dir", "/d", "-serf-wan-port", "70000"}, []string{"-serf-wan-port: ", "70000"}},
		{[]string{"-config-file", filepath.Join(t.TempDir(), "missing.hcl")}, []string{"missing.hcl"}},
	} {
		_, err := configFromArgs(t, tc.args...)
		if err == nil {
			t.Errorf("%v: got no error, want one containing %q", tc.args, tc.want)
			continue
		}
		line := errorLine(err)
		if strings.Contains(line, "\n") {
			t.Errorf("%v: error line %q has several lines", tc.args, line)
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%v: got error %q, want it to contain %q", tc.args, line, w)
			}
		}
	}
}

func TestAgentBadConfigExitsWithOneLine(t *testing.T) {
	_, stderr, code := runCLI(t, "agent", "-dev", "-dns-port", "70000", "-datacenter", "x_y")
	wantUsage(t, stderr, code, "-dns-port: must be between 0 and 65535, got 70000", "; ", "-datacenter: ")
}

// TestAgentBadFlagValueExitsUsage: a flag value the agent refuses is a
// usage error (exit 2), as docs/reference/cli.md says, whether it does not parse or
// is out of range, and the message names the flag and the value; a bad
// value from a config file is not (exit 1).
func TestAgentBadFlagValueExitsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-dns-port", "fifty"},
		{"-dns-port", "-5"},
		{"-log-level", "loud"},
		{"-bind", "nowhere"},
		{"-log-rotate-duration", "10s"},
		{"-log-rotate-max-files", "-2"},
		{"-retry-interval", "soon"},
	} {
		_, stderr, code := runCLI(t, append([]string{"agent", "-dev"}, args...)...)
		wantUsage(t, stderr, code, args...)
	}
	// A secret is not echoed: the flag alone is named.
	_, stderr, code := runCLI(t, "agent", "-dev", "-encrypt", "not-base64")
	wantUsage(t, stderr, code, "-encrypt: ")
	if strings.Contains(stderr, "not-base64") {
		t.Errorf("got stderr %q, want the key not repeated", stderr)
	}
	file := writeFile(t, "bad.hcl", "ports { dns = -5 }\n")
	_, stderr, code = runCLI(t, "agent", "-dev", "-config-file", file)
	wantError(t, stderr, code, "ports.dns", "-5", file)
}
