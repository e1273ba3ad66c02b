package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/internal/logfile"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/telemetry"
	"github.com/cairndns/cairn/tlsutil"
	"github.com/cairndns/cairn/zones"
)

func TestConfigDefaults(t *testing.T) {
	got := Default()
	want := Config{
		NodeName:              got.NodeName, // the host name: checked below
		Datacenter:            "dc1",
		Domain:                "cluster.",
		BindAddr:              "127.0.0.1",
		ClientAddr:            "127.0.0.1",
		Ports:                 Ports{DNS: 8600, HTTP: 8500, Server: 8300, SerfLAN: 8301, SerfWAN: 8302, HTTPS: -1, DNSTLS: -1},
		LogLevel:              "info",
		LogFile:               logfile.Config{RotateDuration: 24 * time.Hour},
		RetryInterval:         30 * time.Second,
		ReconnectTimeout:      72 * time.Hour,
		CheckUpdateInterval:   5 * time.Minute,
		AEInterval:            time.Minute,
		Zones:                 zones.DefaultConfig(),
		Resolver:              resolver.DefaultConfig(),
		Cache:                 cache.DefaultConfig(),
		ACL:                   ACL{DefaultPolicy: "deny", TokenTTL: 30 * time.Second, TokenMinExpirationTTL: time.Minute, TokenMaxExpirationTTL: 24 * time.Hour, EnableTokenReplication: true, DownPolicy: "extend-cache"},
		TLS:                   TLS{RPC: tlsutil.DefaultConfig(), HTTPS: tlsutil.DefaultConfig(), DNS: tlsutil.DefaultConfig()},
		Limits:                Limits{HTTPMaxConnsPerClient: 200, RPCMaxBurst: 1000, RPCMaxConnsPerClient: 100, RPCMaxCallsPerClient: 2048, KVMaxValueSize: 512 * 1024, DataDirMinFreeBytes: 256 << 20},
		Telemetry:             telemetry.Config{PrometheusRetentionTime: time.Minute, DisableHostname: true, ConsulAliases: true},
		HTTP:                  HTTPConfig{ReadTimeout: 10 * time.Second},
		Performance:           Performance{RaftMultiplier: 1, CommitTimeout: 25 * time.Millisecond, RPCHoldTimeout: 7 * time.Second, RaftGroupCommit: true},
		RaftLogStore:          RaftLogStore{WALSegmentSizeMB: 64},
		RaftSnapshotThreshold: 8192, RaftSnapshotInterval: 120 * time.Second, RaftTrailingLogs: 10240,
		ServerServiceName: "cairn",
		Autopilot: Autopilot{CleanupDeadServers: true, LastContactThreshold: 200 * time.Millisecond,
			MaxTrailingLogs: 250, ServerStabilizationTime: 10 * time.Second},
		Coordinates: Coordinates{SyncIntervalMin: 10 * time.Second, UpdatePeriod: 5 * time.Second, UpdateBatchSize: 128, UpdateMaxBatches: 5},
		// memberlist's LAN and WAN presets, which are Consul's.
		GossipLAN: GossipTiming{GossipNodes: 3, GossipInterval: 200 * time.Millisecond, ProbeInterval: time.Second,
			ProbeTimeout: 500 * time.Millisecond, RetransmitMult: 4, SuspicionMult: 4},
		GossipWAN: GossipTiming{GossipNodes: 4, GossipInterval: 500 * time.Millisecond, ProbeInterval: 5 * time.Second,
			ProbeTimeout: 3 * time.Second, RetransmitMult: 4, SuspicionMult: 6},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig: got %+v, want %+v", got, want)
	}

	wantNode := "cairn"
	if h, err := os.Hostname(); err == nil && h != "" {
		h, _, _ = strings.Cut(h, ".")
		wantNode = strings.ToLower(h)
	}
	if got.NodeName != wantNode {
		t.Errorf("NodeName: got %q, want %q (the host name up to its first dot, lowercased)", got.NodeName, wantNode)
	}

	// The defaults lack only a data directory, which -dev makes optional.
	err := got.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "data_dir" || len(fieldsOf(err)) != 1 {
		t.Errorf("Default().Validate(): got %v, want only a data_dir error", err)
	}
	dev := Default()
	dev.Dev = true
	if err := dev.Validate(); err != nil {
		t.Errorf("Default() with Dev: got %v, want valid", err)
	}
}

// validConfig is a configuration Validate accepts, to change one field of.
func validConfig() Config {
	c := Default()
	c.NodeName = "node-1"
	c.DataDir = "/var/lib/cairn"
	return c
}

// fieldsOf lists the Field of every *FieldError joined in err, in order.
func fieldsOf(err error) []string {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	var fields []string
	for _, e := range errs {
		var fe *FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fe.Field)
		} else {
			fields = append(fields, "not a *FieldError: "+e.Error())
		}
	}
	return fields
}

func TestConfigValidateRejects(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		field string // the FieldError.Field wanted
		value string // shown in the test name
		edit  func(*Config)
	}{
		{"node_name", `""`, func(c *Config) { c.NodeName = "" }},
		{"bootstrap_expect", "-1", func(c *Config) { c.BootstrapExpect = -1 }},
		{"bootstrap_expect", "3 on a client", func(c *Config) { c.Server, c.BootstrapExpect = false, 3 }},
		{"bootstrap_expect", "3 with dev", func(c *Config) { c.Server, c.Dev, c.BootstrapExpect = true, true, 3 }},
		{"retry_join", "with dev", func(c *Config) { c.Dev, c.Join = true, []string{"10.0.0.1"} }},
		{"retry_join[1]", `""`, func(c *Config) { c.Join = []string{"10.0.0.1", " "} }},
		{"retry_join_wan", "on a client", func(c *Config) { c.Server, c.JoinWAN = false, []string{"10.0.0.1"} }},
		{"retry_join_wan", "with dev", func(c *Config) { c.Server, c.Dev, c.JoinWAN = true, true, []string{"10.0.0.1"} }},
		{"retry_join_wan[0]", `""`, func(c *Config) { c.Server, c.JoinWAN = true, []string{""} }},
		{"ports.serf_wan", "-1", func(c *Config) { c.Ports.SerfWAN = -1 }},
		{"ports.dns_tls", "-2", func(c *Config) { c.Ports.DNSTLS = -2 }},
		{"ports.dns_tls", "853 without a certificate", func(c *Config) { c.Ports.DNSTLS = 853 }},
		{"retry_interval", "0", func(c *Config) { c.RetryInterval = 0 }},
		{"retry_max", "-1", func(c *Config) { c.RetryMax = -1 }},
		{"reconnect_timeout", "30s", func(c *Config) { c.ReconnectTimeout = 30 * time.Second }},
		{"check_update_interval", "-1s", func(c *Config) { c.CheckUpdateInterval = -time.Second }},
		{"ae_interval", "10ms", func(c *Config) { c.AEInterval = 10 * time.Millisecond }},
		{"ports.serf_lan", "70000", func(c *Config) { c.Ports.SerfLAN = 70000 }},
		{"encrypt", "not base64", func(c *Config) { c.EncryptKey = "not base64!" }},
		{"encrypt", "10 bytes", func(c *Config) { c.EncryptKey = "MDEyMzQ1Njc4OQ==" }},
		{"node_name", "a.b", func(c *Config) { c.NodeName = "a.b" }},
		{"node_id", "web-1", func(c *Config) { c.NodeID = "web-1" }},
		{"node_id", "a UUID without dashes", func(c *Config) { c.NodeID = "adf4238a882b9ddc4a9d5b6758e4159e" }},
		{"node_name", "a_b", func(c *Config) { c.NodeName = "a_b" }},
		{"node_name", "-a", func(c *Config) { c.NodeName = "-a" }},
		{"node_name", "a-", func(c *Config) { c.NodeName = "a-" }},
		{"node_name", "64 letters", func(c *Config) { c.NodeName = long }},
		{"datacenter", `""`, func(c *Config) { c.Datacenter = "" }},
		{"datacenter", "dc_1", func(c *Config) { c.Datacenter = "dc_1" }},
		{"datacenter", `"dc 1"`, func(c *Config) { c.Datacenter = "dc 1" }},
		{"datacenter", "service", func(c *Config) { c.Datacenter = "service" }},
		{"datacenter", "Node", func(c *Config) { c.Datacenter = "Node" }},
		{"domain", `""`, func(c *Config) { c.Domain = "" }},
		{"domain", ".", func(c *Config) { c.Domain = "." }},
		{"domain", "bad..domain", func(c *Config) { c.Domain = "bad..domain" }},
		{"domain", ".cluster", func(c *Config) { c.Domain = ".cluster" }},
		{"domain", "my_zone.", func(c *Config) { c.Domain = "my_zone." }},
		{"domain", "64-letter label", func(c *Config) { c.Domain = long + ".cluster." }},
		{"bind_addr", `""`, func(c *Config) { c.BindAddr = "" }},
		{"bind_addr", "nowhere", func(c *Config) { c.BindAddr = "nowhere" }},
		{"bind_addr", "127.0.0.1:8300", func(c *Config) { c.BindAddr = "127.0.0.1:8300" }},
		{"client_addr", "::x", func(c *Config) { c.ClientAddr = "::x" }},
		{"client_addr", "localhost", func(c *Config) { c.ClientAddr = "localhost" }},
		{"advertise_addr", "0.0.0.0", func(c *Config) { c.AdvertiseAddr = "0.0.0.0" }},
		{"advertise_addr", "::", func(c *Config) { c.AdvertiseAddr = "::" }},
		{"advertise_addr", "host.example", func(c *Config) { c.AdvertiseAddr = "host.example" }},
		{"advertise_addr_wan", "0.0.0.0", func(c *Config) { c.AdvertiseAddrWAN = "0.0.0.0" }},
		{"advertise_addr_wan", "wan.example", func(c *Config) { c.AdvertiseAddrWAN = "wan.example" }},
		{"ports.dns", "-1", func(c *Config) { c.Ports.DNS = -1 }},
		{"ports.dns", "65536", func(c *Config) { c.Ports.DNS = 65536 }},
		{"ports.http", "-2", func(c *Config) { c.Ports.HTTP = -2 }},
		{"ports.http", "70000", func(c *Config) { c.Ports.HTTP = 70000 }},
		{"ports.server", "-8300", func(c *Config) { c.Ports.Server = -8300 }},
		{"ports.server", "65536", func(c *Config) { c.Ports.Server = 65536 }},
		{"data_dir", `"" without Dev`, func(c *Config) { c.DataDir = "" }},
		{"log_level", `""`, func(c *Config) { c.LogLevel = "" }},
		{"log_level", "loud", func(c *Config) { c.LogLevel = "loud" }},
		{"log_level", "warning", func(c *Config) { c.LogLevel = "warning" }},
		{"alt_domain", "bad..zone", func(c *Config) { c.AltDomain = "bad..zone" }},
		{"alt_domain", "same as domain", func(c *Config) { c.AltDomain = "Cluster" }},
		{"recursors[1]", "dns.example", func(c *Config) { c.Resolver.Recursors = []string{"10.0.0.1", "dns.example"} }},
		{"recursors[0]", "10.0.0.1:99999", func(c *Config) { c.Resolver.Recursors = []string{"10.0.0.1:99999"} }},
		{"dns_config.node_ttl", "-1s", func(c *Config) { c.Zones.NodeTTL = -time.Second }},
		{"dns_config.ptr_ttl", "-1s", func(c *Config) { c.Zones.PTRTTL = -time.Second }},
		{"dns_config.service_ttl[we_b]", "bad key", func(c *Config) { c.Zones.ServiceTTLs = map[string]time.Duration{"we_b": 0} }},
		{"dns_config.service_ttl[a*b]", "inner star", func(c *Config) { c.Zones.ServiceTTLs = map[string]time.Duration{"a*b": 0} }},
		{"dns_config.service_ttl[*]", "-1s", func(c *Config) { c.Zones.ServiceTTLs = map[string]time.Duration{"*": -time.Second} }},
		{"dns_config.udp_answer_limit", "-1", func(c *Config) { c.Resolver.UDPAnswerLimit = -1 }},
		{"dns_config.a_record_limit", "-1", func(c *Config) { c.Resolver.ARecordLimit = -1 }},
		{"dns_config.max_udp_size", "511", func(c *Config) { c.Resolver.UDPSize = 511 }},
		{"dns_config.udp_sockets", "-1", func(c *Config) { c.Resolver.UDPSockets = -1 }},
		{"dns_config.recursor_timeout", "-1s", func(c *Config) { c.Resolver.RecursorTimeout = -time.Second }},
		{"dns_config.max_stale", "-1s", func(c *Config) { c.Cache.MaxStale = -time.Second }},
		{"dns_config.cache_max_entries", "-1", func(c *Config) { c.Cache.MaxEntries = -1 }},
		{"dns_config.cache_idle_timeout", "-1s", func(c *Config) { c.Cache.IdleTimeout = -time.Second }},
		{"dns_config.recursor_strategy", "fastest", func(c *Config) { c.Resolver.RecursorStrategy = "fastest" }},
		{"dns_config.unhealthy_answer", "maybe", func(c *Config) { c.Resolver.UnhealthyAnswer = "maybe" }},
		{"dns_config.max_stale", "0", func(c *Config) { c.Cache.MaxStale = 0 }},
		{"dns_config.max_stale", "1s, below StaleAfter", func(c *Config) { c.Cache.MaxStale = time.Second }},
		{"dns_config.cache_max_entries", "0", func(c *Config) { c.Cache.MaxEntries = 0 }},
		{"dns_config.max_udp_size", "0", func(c *Config) { c.Resolver.UDPSize = 0 }},
		{"dns_config.recursor_strategy", `""`, func(c *Config) { c.Resolver.RecursorStrategy = "" }},
		{"dns_config.soa.refresh", "0", func(c *Config) { c.Zones.SOA.Refresh = 0 }},
		{"dns_config.soa.retry", "0", func(c *Config) { c.Zones.SOA.Retry = 0 }},
		{"dns_config.soa.expire", "below refresh", func(c *Config) { c.Zones.SOA.Expire = 1 }},
		{"node_meta[a b]", "bad key", func(c *Config) { c.NodeMeta = map[string]string{"a b": "x"} }},
		{"dns_config.dnssec.enabled", "off with auto", func(c *Config) { c.Server, c.DNSSEC.Auto = true, true }},
		{"dns_config.dnssec.auto", "on a client", func(c *Config) { c.Resolver.DNSSEC.Enabled, c.DNSSEC.Auto = true, true }},
		{"dns_config.dnssec.auto", "with key_file", func(c *Config) {
			c.Server, c.Resolver.DNSSEC.Enabled, c.DNSSEC.Auto, c.DNSSEC.KeyFile = true, true, true, dnssecKeyFile(t)
		}},
		{"dns_config.dnssec.key_file", "missing", func(c *Config) {
			c.Server, c.Resolver.DNSSEC.Enabled, c.DNSSEC.KeyFile = true, true, filepath.Join(t.TempDir(), "absent.pem")
		}},
		{"dns_config.dnssec.key_file", "not a key", func(c *Config) {
			c.Server, c.Resolver.DNSSEC.Enabled, c.DNSSEC.KeyFile = true, true, writeConfig(t, "key.pem", "hello\n")
		}},
		{"dns_config.dnssec.signature_validity", "1m", func(c *Config) {
			c.Resolver.DNSSEC.Enabled, c.Resolver.DNSSEC.SignatureValidity = true, time.Minute
		}},
	} {
		t.Run(tc.field+"="+tc.value, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FieldError for %s", err, tc.field)
			}
			if got := fieldsOf(err); !slices.Equal(got, []string{tc.field}) {
				t.Errorf("got errors for %q, want only %q", got, tc.field)
			}
			if fe.Reason == "" {
				t.Errorf("got an empty Reason, want why %s is rejected", tc.field)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "config "+tc.field+": ") {
				t.Errorf("got message %q, want it to start with %q", msg, "config "+tc.field+": ")
			}
		})
	}
}

func TestConfigValidateAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"defaults with a data dir", func(*Config) {}},
		{"dev without a data dir", func(c *Config) { c.Dev, c.DataDir = true, "" }},
		{"63-letter node name", func(c *Config) { c.NodeName = strings.Repeat("n", 63) }},
		{"upper-case node name", func(c *Config) { c.NodeName = "Web-01" }},
		{"domain without the final dot", func(c *Config) { c.Domain = "cluster" }},
		{"domain of several labels", func(c *Config) { c.Domain = "svc.example.com." }},
		{"ports 0 pick free ones", func(c *Config) { c.Ports = Ports{HTTPS: -1, DNSTLS: -1} }},
		{"highest ports", func(c *Config) { c.Ports = Ports{DNS: 65535, HTTP: 65535, Server: 65535, HTTPS: -1, DNSTLS: -1} }},
		{"plain HTTP off (Consul's -1)", func(c *Config) { c.Ports.HTTP = -1 }},
		{"IPv6 and unspecified addresses", func(c *Config) { c.BindAddr, c.ClientAddr = "::", "::1" }},
		{"advertise address", func(c *Config) { c.AdvertiseAddr = "10.0.0.7" }},
		{"log levels in any case", func(c *Config) { c.LogLevel = "DEBUG" }},
		{"log level warn", func(c *Config) { c.LogLevel = "warn" }},
		{"log level error", func(c *Config) { c.LogLevel = "error" }},
		{"server expecting 3, joining", func(c *Config) {
			c.Server, c.BootstrapExpect, c.Join, c.RetryMax = true, 3, []string{"10.0.0.1", "10.0.0.2:8301"}, 5
		}},
		{"bootstrap_expect 1 on a dev agent", func(c *Config) { c.Dev, c.Server, c.BootstrapExpect = true, true, 1 }},
		{"32-byte gossip key", func(c *Config) { c.EncryptKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" }},
	} {
		c := validConfig()
		tc.edit(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: got %v, want valid", tc.name, err)
		}
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	c := Config{
		NodeName:        "a.b",
		Datacenter:      "dc_1",
		Domain:          "",
		BindAddr:        "nowhere",
		ClientAddr:      "",
		AdvertiseAddr:   "0.0.0.0",
		Ports:           Ports{DNS: 70000, HTTP: -2, Server: 65536, SerfLAN: 65536, SerfWAN: 65536, HTTPS: -1, DNSTLS: -1},
		LogLevel:        "loud",
		BootstrapExpect: -1,
		RetryInterval:   -time.Second,
		RetryMax:        -1,
		EncryptKey:      "not base64",
		Zones:           zones.DefaultConfig(),
		Resolver:        resolver.DefaultConfig(),
		Cache:           cache.DefaultConfig(),
	}
	err := c.Validate()
	got := fieldsOf(err)
	slices.Sort(got)
	want := []string{"acl.default_policy", "acl.down_policy", "acl.token_min_expiration_ttl", "advertise_addr", "ae_interval", "bind_addr", "bootstrap_expect", "client_addr",
		"coordinate_update_batch_size", "coordinate_update_max_batches", "coordinate_update_period", "data_dir", "datacenter", "domain",
		"encrypt",
		"gossip_lan.gossip_interval", "gossip_lan.gossip_nodes", "gossip_lan.probe_interval", "gossip_lan.probe_timeout", "gossip_lan.retransmit_mult", "gossip_lan.suspicion_mult",
		"gossip_wan.gossip_interval", "gossip_wan.gossip_nodes", "gossip_wan.probe_interval", "gossip_wan.probe_timeout", "gossip_wan.retransmit_mult", "gossip_wan.suspicion_mult",
		"http_config.read_timeout", "limits.kv_max_value_size", "log_level", "log_rotate_duration", "node_name", "performance.commit_timeout", "performance.raft_multiplier", "performance.rpc_hold_timeout",
		"ports.dns", "ports.http", "ports.serf_lan", "ports.serf_wan", "ports.server", "raft_logstore.wal.segment_size_mb",
		"raft_snapshot_interval", "raft_snapshot_threshold", "reconnect_timeout", "retry_interval", "retry_max", "server_service_name", "sync_coordinate_interval_min", "telemetry.prometheus_retention_time"}
	if !slices.Equal(got, want) {
		t.Errorf("got errors for %q, want %q", got, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Errorf("errors.As(%v, *FieldError): got false, want true", err)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(want) {
		t.Errorf("got %d lines in %q, want one per problem, %d", n, err, len(want))
	}
}

func writeConfig(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// everyKey is the configuration the files of TestLoadFileEveryKey set:
// every key, each different from its default.
func everyKey() Config {
	c := Default()
	c.NodeName, c.Datacenter, c.Domain = "n7", "dc2", "corp."
	c.NodeID = "adf4238a-882b-9ddc-4a9d-5b6758e4159e"
	c.BindAddr, c.AdvertiseAddr, c.ClientAddr = "10.0.0.7", "10.0.0.8", "0.0.0.0"
	c.AdvertiseAddrWAN = "198.51.100.8"
	c.DataDir, c.Server, c.LogLevel = "/data/cairn", true, "debug"
	c.Ports = Ports{DNS: 53, HTTP: 9500, Server: 9300, SerfLAN: 9301, SerfWAN: 9302, HTTPS: -1, DNSTLS: -1}
	c.BootstrapExpect, c.Join = 3, []string{"10.0.0.1", "10.0.0.2:9301"}
	c.JoinWAN = []string{"10.1.0.1", "10.1.0.2:9302"}
	c.RetryInterval, c.RetryMax, c.EncryptKey = 5*time.Second, 7, "MDEyMzQ1Njc4OWFiY2RlZg=="
	c.ReconnectTimeout = 8 * time.Hour
	c.EnableScriptChecks, c.CheckUpdateInterval, c.AEInterval = true, 30*time.Second, 2*time.Minute
	c.AltDomain = "consul."
	c.NodeMeta = map[string]string{"rack": "r1", "az-1": "a"}
	c.OnlyPassing = true
	c.Zones.NodeTTL, c.Zones.PTRTTL = 10*time.Second, 20*time.Second
	c.Zones.ServiceTTLs = map[string]time.Duration{"*": 5 * time.Second, "db*": time.Minute}
	c.Zones.NodeMetaTXT, c.Zones.AdditionalNodeMetaTXT = false, false
	c.Zones.SOA = zones.SOAConfig{Refresh: 1, Retry: 2, Expire: 3, MinTTL: 4}
	c.Resolver.Recursors = []string{"10.0.0.53", "10.0.0.54:5353"}
	c.Resolver.UDPAnswerLimit, c.Resolver.ARecordLimit, c.Resolver.UDPSize, c.Resolver.SetTC = 3, 5, 4096, false
	c.Resolver.UDPSockets = 3
	c.Resolver.RecursorTimeout, c.Resolver.RecursorStrategy, c.Resolver.UnhealthyAnswer = 3*time.Second, "random", "all"
	c.Cache.MaxStale, c.Cache.MaxEntries, c.Cache.IdleTimeout = 24*time.Hour, 500, 2*time.Minute
	return c
}

func TestLoadFileEveryKey(t *testing.T) {
	for name, content := range map[string]string{
		"cairn.hcl": `
node_name      = "n7"
node_id        = "adf4238a-882b-9ddc-4a9d-5b6758e4159e"
datacenter     = "dc2"
domain         = "corp."
bind_addr      = "10.0.0.7"
advertise_addr = "10.0.0.8"
advertise_addr_wan = "198.51.100.8"
client_addr    = "0.0.0.0"
data_dir       = "/data/cairn"
server         = true
log_level      = "debug"
ports {
  dns      = 53
  http     = 9500
  server   = 9300
  serf_lan = 9301
  serf_wan = 9302
}
bootstrap_expect = 3
retry_join       = ["10.0.0.1", "10.0.0.2:9301"]
retry_join_wan   = ["10.1.0.1", "10.1.0.2:9302"]
retry_interval   = "5s"
retry_max        = 7
reconnect_timeout = "8h"
enable_script_checks = true
check_update_interval = "30s"
ae_interval = "2m"
encrypt          = "MDEyMzQ1Njc4OWFiY2RlZg=="
alt_domain = "consul."
node_meta { rack = "r1", "az-1" = "a" }
recursors = ["10.0.0.53", "10.0.0.54:5353"]
dns_config {
  node_ttl = "10s"
  ptr_ttl = "20s"
  service_ttl { "*" = "5s", "db*" = "1m" }
  only_passing = true
  udp_answer_limit = 3
  a_record_limit = 5
  max_udp_size = 4096
  udp_sockets = 3
  enable_truncate = false
  recursor_timeout = "3s"
  max_stale = "24h"
  cache_max_entries = 500
  cache_idle_timeout = "2m"
  recursor_strategy = "random"
  unhealthy_answer = "all"
  node_meta_txt = false
  enable_additional_node_meta_txt = false
  soa { refresh = 1, retry = 2, expire = 3, min_ttl = 4 }
}
`,
		"assigned.hcl": `
node_name = "n7"
node_id = "adf4238a-882b-9ddc-4a9d-5b6758e4159e"
datacenter = "dc2"
domain = "corp."
bind_addr = "10.0.0.7"
advertise_addr = "10.0.0.8"
advertise_addr_wan = "198.51.100.8"
client_addr = "0.0.0.0"
data_dir = "/data/cairn"
server = true
log_level = "debug"
ports = { dns = 53, http = 9500, server = 9300, serf_lan = 9301, serf_wan = 9302 }
bootstrap_expect = 3
retry_join = ["10.0.0.1", "10.0.0.2:9301"]
retry_join_wan = ["10.1.0.1", "10.1.0.2:9302"]
retry_interval = "5s"
retry_max = 7
reconnect_timeout = "8h"
enable_script_checks = true
check_update_interval = "30s"
ae_interval = "2m"
encrypt = "MDEyMzQ1Njc4OWFiY2RlZg=="
alt_domain = "consul."
node_meta { rack = "r1", "az-1" = "a" }
recursors = ["10.0.0.53", "10.0.0.54:5353"]
dns_config {
  node_ttl = "10s"
  ptr_ttl = "20s"
  service_ttl { "*" = "5s", "db*" = "1m" }
  only_passing = true
  udp_answer_limit = 3
  a_record_limit = 5
  max_udp_size = 4096
  udp_sockets = 3
  enable_truncate = false
  recursor_timeout = "3s"
  max_stale = "24h"
  cache_max_entries = 500
  cache_idle_timeout = "2m"
  recursor_strategy = "random"
  unhealthy_answer = "all"
  node_meta_txt = false
  enable_additional_node_meta_txt = false
  soa { refresh = 1, retry = 2, expire = 3, min_ttl = 4 }
}
`,
		"cairn.json": `{
  "node_name": "n7",
  "node_id": "adf4238a-882b-9ddc-4a9d-5b6758e4159e",
  "datacenter": "dc2",
  "domain": "corp.",
  "bind_addr": "10.0.0.7",
  "advertise_addr": "10.0.0.8",
  "advertise_addr_wan": "198.51.100.8",
  "client_addr": "0.0.0.0",
  "data_dir": "/data/cairn",
  "server": true,
  "log_level": "debug",
  "ports": {"dns": 53, "http": 9500, "server": 9300, "serf_lan": 9301, "serf_wan": 9302},
  "bootstrap_expect": 3,
  "retry_join": ["10.0.0.1", "10.0.0.2:9301"],
  "retry_join_wan": ["10.1.0.1", "10.1.0.2:9302"],
  "retry_interval": "5s",
  "retry_max": 7,
  "reconnect_timeout": "8h",
  "enable_script_checks": true,
  "check_update_interval": "30s",
  "ae_interval": "2m",
  "encrypt": "MDEyMzQ1Njc4OWFiY2RlZg==",
  "alt_domain": "consul.",
  "node_meta": {"rack": "r1", "az-1": "a"},
  "recursors": ["10.0.0.53", "10.0.0.54:5353"],
  "dns_config": {
    "node_ttl": "10s",
    "ptr_ttl": "20s",
    "service_ttl": {"*": "5s", "db*": "1m"},
    "only_passing": true,
    "udp_answer_limit": 3,
    "a_record_limit": 5,
    "max_udp_size": 4096,
    "udp_sockets": 3,
    "enable_truncate": false,
    "recursor_timeout": "3s",
    "max_stale": "24h",
    "cache_max_entries": 500,
    "cache_idle_timeout": "2m",
    "recursor_strategy": "random",
    "unhealthy_answer": "all",
    "node_meta_txt": false,
    "enable_additional_node_meta_txt": false,
    "soa": {"refresh": 1, "retry": 2, "expire": 3, "min_ttl": 4}
  }
}`,
	} {
		got := Default()
		if err := LoadFile(writeConfig(t, name, content), &got); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := everyKey(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}

func TestLoadFileKeepsAbsentKeys(t *testing.T) {
	// Start from values that are not the defaults, so that a key reset to
	// its default or zero value shows.
	start := everyKey()
	start.Dev = true
	for _, tc := range []struct {
		name, content string
		edit          func(*Config) // what the file changes
	}{
		{"empty.hcl", "", func(*Config) {}},
		{"empty.json", "{}", func(*Config) {}},
		{"comment.hcl", "# nothing set\n", func(*Config) {}},
		{"dc.hcl", `datacenter = "dc9"`, func(c *Config) { c.Datacenter = "dc9" }},
		{"dc.json", `{"datacenter": "dc9"}`, func(c *Config) { c.Datacenter = "dc9" }},
		{"one-port.hcl", "ports {\n  http = 1\n}\n", func(c *Config) { c.Ports.HTTP = 1 }},
		{"one-port.json", `{"ports": {"dns": 2}}`, func(c *Config) { c.Ports.DNS = 2 }},
		{"https-only.hcl", "ports {\n  http = -1\n  https = 8501\n}\n", func(c *Config) { c.Ports.HTTP, c.Ports.HTTPS = -1, 8501 }},
		{"empty-ports.hcl", "ports {}\n", func(*Config) {}},
		{"server-false.hcl", "server = false\n", func(c *Config) { c.Server = false }},
		{"zero-port.json", `{"ports": {"server": 0}}`, func(c *Config) { c.Ports.Server = 0 }},
		{"empty-string.hcl", `advertise_addr = ""`, func(c *Config) { c.AdvertiseAddr = "" }},
	} {
		got := start
		if err := LoadFile(writeConfig(t, tc.name, tc.content), &got); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := start
		tc.edit(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, want)
		}
	}
}

func TestLoadFileUnknownKey(t *testing.T) {
	for _, tc := range []struct {
		name, content, key string
	}{
		{"typo.hcl", `data_dri = "/d"`, "data_dri"},
		{"typo.json", `{"datacenter": "dc2", "data_dri": "/d"}`, "data_dri"},
		{"dev.hcl", "dev = true\n", "dev"}, // -dev is a flag only
		{"port.hcl", "ports {\n  dns = 53\n  dsn = 54\n}\n", "ports.dsn"},
		{"port.json", `{"ports": {"http": 1, "grpc": 2}}`, "ports.grpc"},
		{"assigned-port.hcl", "ports = { grpc = 1 }\n", "ports.grpc"},
		{"labelled-block.hcl", "ports \"x\" {\n  dns = 1\n}\n", "ports.x"},
	} {
		path := writeConfig(t, tc.name, tc.content)
		c := Default()
		err := LoadFile(path, &c)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.key {
			t.Errorf("%s: got %v, want a *FieldError for %q", tc.name, err, tc.key)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "unknown key") {
			t.Errorf("%s: got %q, want the file's path and \"unknown key\"", tc.name, msg)
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("%s: got %+v after the error, want the config unchanged", tc.name, c)
		}
	}
}

func TestLoadFileSyntaxError(t *testing.T) {
	for _, tc := range []struct {
		name, content string
	}{
		{"unterminated.hcl", `datacenter = "dc2`},
		{"unclosed.hcl", "ports {\n  dns = 53\n"},
		{"no-equals.hcl", `datacenter "dc2"`},
		{"bare-word.hcl", "datacenter = dc2\n"},
		{"no-key.hcl", "= 1\n"},
		{"bare-word.json", `{"datacenter": dc2}`},
		{"missing-value.json", `{"domain": , "datacenter": "dc2"}`},
		{"truncated.json", `{"datacenter": "dc2"`},
		{"no-colon.json", `{"datacenter" "dc2"}`},
		{"trailing.json", `{"datacenter": "dc2"} x`},
		{"last-value-missing.json", `{"datacenter": }`},
		{"hcl-in.json", `datacenter = "dc2"`},
		{"two-ports-blocks.hcl", "ports { dns = 1 }\nports { http = 2 }\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.name, tc.content)
			c := Default()
			err := LoadFile(path, &c)
			if err == nil {
				t.Fatalf("got no error for %q, want a syntax error", tc.content)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("got %q, want it to name the file %s", err, path)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v after the error, want the config unchanged", c)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.hcl")
	c := Default()
	err := LoadFile(path, &c)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want fs.ErrNotExist naming %s", err, path)
	}
}

func TestLoadFileDNSErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, field string
	}{
		{"ttl.hcl", "dns_config { node_ttl = \"soon\" }\n", "dns_config.node_ttl"},
		{"svcttl.hcl", "dns_config { service_ttl { web = \"1 minute\" } }\n", "dns_config.service_ttl[web]"},
		{"unknown.hcl", "dns_config { allow_recursion = true }\n", "dns_config.allow_recursion"},
		{"soa.json", `{"dns_config": {"soa": {"minimum": 5}}}`, "dns_config.soa.minimum"},
		{"soa-neg.hcl", "dns_config { soa { min_ttl = -1 } }\n", "dns_config.soa.min_ttl"},
		{"udp-big.hcl", "dns_config { max_udp_size = 65536 }\n", "dns_config.max_udp_size"},
		{"udp-zero.json", `{"dns_config": {"max_udp_size": 0}}`, "dns_config.max_udp_size"},
		{"dnssec.hcl", "dns_config { dnssec { signature_validity = \"a day\" } }\n", "dns_config.dnssec.signature_validity"},
		{"dnssec-unknown.hcl", "dns_config { dnssec { algorithm = 8 } }\n", "dns_config.dnssec.algorithm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			err := LoadFile(writeConfig(t, tc.name, tc.content), &c)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("got %v, want a FieldError for %s", err, tc.field)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v after the error, want the config unchanged", c)
			}
		})
	}
}

// dnssecKeyFile writes a new DNSSEC key to a file and returns its path.
func dnssecKeyFile(t *testing.T) string {
	t.Helper()
	key, err := resolver.NewSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	pem, err := resolver.EncodeSigningKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, "dnssec.pem", string(pem))
}

func TestLoadFileDNSSEC(t *testing.T) {
	key := dnssecKeyFile(t)
	c := Default()
	c.Server = true
	content := "dns_config {\n  dnssec {\n    enabled = true\n    key_file = \"" + key + "\"\n    signature_validity = \"2h\"\n  }\n}\n"
	if err := LoadFile(writeConfig(t, "dnssec.hcl", content), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Resolver.DNSSEC.Enabled || c.DNSSEC.KeyFile != key || c.Resolver.DNSSEC.SignatureValidity != 2*time.Hour {
		t.Fatalf("got %+v and %+v", c.Resolver.DNSSEC, c.DNSSEC)
	}
	c.DataDir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if k, err := c.DNSSECKey(); err != nil || k == nil {
		t.Errorf("DNSSECKey: %v, %v", k, err)
	}
}
