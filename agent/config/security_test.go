package config

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestACLBlock(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"acl.hcl", `acl {
  enabled = true
  default_policy = "allow"
  token_ttl = "10s"
  token_min_expiration_ttl = "2m"
  token_max_expiration_ttl = "8h"
  tokens { agent = "a-token" default = "d-token" dns = "dns-token" replication = "r-token" }
  enable_token_replication = false
  down_policy = "deny"
  tokens_secret_readable = true
}
primary_datacenter = "dc9"`},
		{"acl.json", `{"acl": {"enabled": true, "default_policy": "allow", "token_ttl": "10s",
  "token_min_expiration_ttl": "2m", "token_max_expiration_ttl": "8h",
  "tokens": {"agent": "a-token", "default": "d-token", "dns": "dns-token", "replication": "r-token"},
  "enable_token_replication": false, "down_policy": "deny", "tokens_secret_readable": true, "primary_datacenter": "dc9"}}`},
	} {
		c := Default()
		if err := LoadFile(writeConfig(t, tc.name, tc.file), &c); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := ACL{Enabled: true, DefaultPolicy: "allow", TokenTTL: 10 * time.Second,
			TokenMinExpirationTTL: 2 * time.Minute, TokenMaxExpirationTTL: 8 * time.Hour, Tokens: ACLTokens{Agent: "a-token", Default: "d-token", DNS: "dns-token", Replication: "r-token"},
			PrimaryDatacenter: "dc9", EnableTokenReplication: false, DownPolicy: "deny", TokensSecretReadable: true}
		if c.ACL != want {
			t.Errorf("%s: got %+v, want %+v", tc.name, c.ACL, want)
		}
	}
}

func TestACLBlockErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ file, field string }{
		{`acl { default_policy = "maybe" }`, "acl.default_policy"},
		{`acl { token_ttl = "soon" }`, "acl.token_ttl"},
		{`acl { down_policy = "maybe" }`, "acl.down_policy"},
		{`primary_datacenter = "dc_1"`, "primary_datacenter"},
		{`acl { token_min_expiration_ttl = "soon" }`, "acl.token_min_expiration_ttl"},
		{`acl { token_min_expiration_ttl = "0s" }`, "acl.token_min_expiration_ttl"},
		{`acl { token_max_expiration_ttl = "30s" }`, "acl.token_max_expiration_ttl"},
		{`acl { tokens { initial_management = "not-a-uuid" } }`, "acl.tokens.initial_management"},
		{`acl { enabeld = true }`, "acl.enabeld"},
		{`limits { kv_max_value_size = 0 }`, "limits.kv_max_value_size"},
		{`limits { kv_max_value_size = 5000000 }`, "limits.kv_max_value_size"},
		{`limits { rpc_max_conns_per_client = -1 }`, "limits.rpc_max_conns_per_client"},
		{`limits { rpc_max_calls_per_client = -1 }`, "limits.rpc_max_calls_per_client"},
		{`limits { data_dir_min_free_bytes = -1 }`, "limits.data_dir_min_free_bytes"},
		{`raft_logstore { wal { segment_size_mb = 0 } }`, "raft_logstore.wal.segment_size_mb"},
		{`raft_logstore { wal { segment_size_mb = 2048 } }`, "raft_logstore.wal.segment_size_mb"},
	} {
		c := Default()
		c.Dev = true
		err := LoadFile(writeConfig(t, "bad.hcl", tc.file), &c)
		if err == nil {
			err = c.Validate()
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want an error naming %s", tc.file, err, tc.field)
		}
	}
}

func TestLimitsAndTLSBlocks(t *testing.T) {
	c := Default()
	file := `
limits { http_max_conns_per_client = 50  dns_max_tcp_conns = 64  dns_max_tcp_conns_per_client = 8  rpc_rate = 100.5  rpc_max_burst = 10  kv_max_value_size = 1024
  rpc_max_conns_per_client = 7  rpc_max_calls_per_client = 300  data_dir_min_free_bytes = 1073741824 }
http_config { allowed_hosts = ["cairn.example"]  read_timeout = "3s" }
dns_config {
  rrl { enabled = true  responses_per_second = 20  slip = 3  all_per_second = 40  min_amplification = 0 }
  answer_cookie = false  cookie_secret = "e5e973e5a6b2a43f48e7dc849e37bfcf"
}
tls {
  defaults { ca_file = "/ca.pem"  verify_incoming = true }
  internal_rpc { cert_file = "/rpc.pem"  key_file = "/rpc-key.pem"  verify_server_hostname = true }
  https { cert_file = "/https.pem"  key_file = "/https-key.pem"  verify_incoming = false }
  dns { cert_file = "/dns.pem"  key_file = "/dns-key.pem" }
}
ports { https = 8501  dns_tls = 853 }
`
	if err := LoadFile(writeConfig(t, "all.hcl", file), &c); err != nil {
		t.Fatal(err)
	}
	if c.Limits.HTTPMaxConnsPerClient != 50 || c.Resolver.MaxTCPConns != 64 || c.Resolver.MaxTCPConnsPerClient != 8 || c.Limits.RPCRate != 100.5 || c.Limits.RPCMaxBurst != 10 || c.Limits.KVMaxValueSize != 1024 ||
		c.Limits.RPCMaxConnsPerClient != 7 || c.Limits.RPCMaxCallsPerClient != 300 || c.Limits.DataDirMinFreeBytes != 1<<30 {
		t.Errorf("limits: got %+v and dns_max_tcp_conns %d (per client %d)", c.Limits, c.Resolver.MaxTCPConns, c.Resolver.MaxTCPConnsPerClient)
	}
	if len(c.HTTP.AllowedHosts) != 1 || c.HTTP.ReadTimeout != 3*time.Second {
		t.Errorf("http_config: got %+v", c.HTTP)
	}
	if rl := c.Resolver.RRL; !rl.Enabled || rl.ResponsesPerSecond != 20 || rl.Slip != 3 || rl.AllPerSecond != 40 || rl.MinAmplification != 0 {
		t.Errorf("rrl: got %+v", rl)
	}
	if r := c.Resolver; r.Cookies || hex.EncodeToString(r.CookieSecret) != "e5e973e5a6b2a43f48e7dc849e37bfcf" {
		t.Errorf("answer_cookie, cookie_secret: got %v, %x", r.Cookies, r.CookieSecret)
	}
	rpc, https := c.TLS.RPC, c.TLS.HTTPS
	if rpc.CAFile != "/ca.pem" || !rpc.VerifyIncoming || rpc.CertFile != "/rpc.pem" || !rpc.VerifyServerHostname {
		t.Errorf("tls internal_rpc: got %+v", rpc)
	}
	if https.CAFile != "/ca.pem" || https.VerifyIncoming || https.CertFile != "/https.pem" || https.VerifyServerHostname {
		t.Errorf("tls https: got %+v", https)
	}
	if c.Ports.HTTPS != 8501 {
		t.Errorf("ports.https: got %d", c.Ports.HTTPS)
	}
	if d := c.TLS.DNS; d.CAFile != "/ca.pem" || !d.VerifyIncoming || d.CertFile != "/dns.pem" || d.KeyFile != "/dns-key.pem" || c.Ports.DNSTLS != 853 {
		t.Errorf("tls dns: got %+v, ports.dns_tls %d", d, c.Ports.DNSTLS)
	}
	for _, file := range []string{`tls { dns { verify_server_hostname = true } }`, `tls { dns { bogus = 1 } }`} {
		bad := Default()
		err := LoadFile(writeConfig(t, "bad-dns.hcl", file), &bad)
		if err == nil || !strings.Contains(err.Error(), "tls.dns.") {
			t.Errorf("%s: got %v, want an error naming the key", file, err)
		}
	}
	bad := Default()
	err := LoadFile(writeConfig(t, "bad.hcl", `tls { defaults { verify_server_hostname = true } }`), &bad)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "tls.defaults.verify_server_hostname" {
		t.Errorf("verify_server_hostname in defaults: got %v, want an error naming it", err)
	}
	for _, secret := range []string{"e5e973", "not hex at all, not hex at all!!", "e5e973e5a6b2a43f48e7dc849e37bfcf00"} {
		bad := Default()
		err := LoadFile(writeConfig(t, "bad-cookie.hcl", `dns_config { cookie_secret = "`+secret+`" }`), &bad)
		if !errors.As(err, &fe) || fe.Field != "dns_config.cookie_secret" {
			t.Errorf("cookie_secret %q: got %v, want an error naming it", secret, err)
		}
	}
}

func TestRaftLogStoreBlock(t *testing.T) {
	c := Default()
	if err := LoadFile(writeConfig(t, "logstore.hcl", `raft_logstore { wal { segment_size_mb = 8 } }`), &c); err != nil {
		t.Fatal(err)
	}
	if got := c.RaftLogStore.WALSegmentSizeMB; got != 8 {
		t.Errorf("raft_logstore.wal.segment_size_mb: got %d, want 8", got)
	}
}
