package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestLoadFileUnknownNestedKey: a key is known by where it stands, not by
// its name alone, at any depth, in HCL (blocks, labels, assignments) and
// JSON alike; the error gives its whole path.
func TestLoadFileUnknownNestedKey(t *testing.T) {
	for _, tc := range []struct {
		name, content, key string
	}{
		{"rrl.hcl", "dns_config {\n  rrl {\n    enabled = true\n    foo = 1\n  }\n}\n", "dns_config.rrl.foo"},
		{"rrl-labels.hcl", "dns_config \"rrl\" {\n  foo = 1\n}\n", "dns_config.rrl.foo"},
		{"rrl.json", `{"dns_config": {"rrl": {"slip": 2, "foo": 1}}}`, "dns_config.rrl.foo"},
		{"tls.hcl", "tls {\n  https {\n    verify_incoming = true\n    cipher_suites = \"x\"\n  }\n}\n", "tls.https.cipher_suites"},
		{"acl-tokens.json", `{"acl": {"tokens": {"agent": "a", "replicaton": "r"}}}`, "acl.tokens.replicaton"},
		{"gossip.hcl", "gossip_wan {\n  probe_interval = \"2s\"\n  push_pull = \"30s\"\n}\n", "gossip_wan.push_pull"},
		{"autopilot.hcl", "autopilot { redundancy_zone_tag = \"az\" }\n", "autopilot.redundancy_zone_tag"},
		{"wal.hcl", "raft_logstore { wal { segment_size_mb = 8\n  sync = false } }\n", "raft_logstore.wal.sync"},
		// A key of one block is not known in another.
		{"misplaced.hcl", "limits { rrl { enabled = true } }\n", "limits.rrl"},
		{"top-level-from-block.hcl", "dns_config { node_name = \"x\" }\n", "dns_config.node_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.name, tc.content)
			c := Default()
			err := LoadFile(path, &c)
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != tc.key || fe.Reason != "unknown key" {
				t.Fatalf("got %v, want an unknown key %q", err, tc.key)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("got %q, want it to name the file", err)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v after the error, want the config unchanged", c)
			}
		})
	}
}

// TestLoadFileWrongType: a value of the wrong type is refused naming the
// key, the value as written and what the key takes (hcl itself says
// `strconv.ParseInt: parsing "fifty"` or `unknown type *ast.LiteralType`).
func TestLoadFileWrongType(t *testing.T) {
	for _, tc := range []struct {
		name, content, key, reason string
	}{
		{"int.hcl", "limits { rpc_max_burst = \"fifty\" }\n", "limits.rpc_max_burst", `got "fifty", want a whole number`},
		{"int.json", `{"dns_config": {"udp_answer_limit": "fifty"}}`, "dns_config.udp_answer_limit", `got "fifty", want a whole number`},
		{"int-float.hcl", "bootstrap_expect = 1.5\n", "bootstrap_expect", "got 1.5, want a whole number"},
		{"port-word.hcl", `ports { dns = "fifty-three" }`, "ports.dns", `got "fifty-three", want a whole number`},
		{"port-fraction.json", `{"ports": {"dns": 1.5}}`, "ports.dns", "got 1.5, want a whole number"},
		{"float.hcl", "limits { rpc_rate = \"fast\" }\n", "limits.rpc_rate", `got "fast", want a number`},
		{"bool.hcl", "server = \"yes\"\n", "server", `got "yes", want true or false`},
		{"bool.json", `{"acl": {"enabled": 1}}`, "acl.enabled", "got 1, want true or false"},
		{"string.hcl", "datacenter = true\n", "datacenter", "got true, want a string"},
		{"string-list.hcl", "datacenter = [\"dc1\"]\n", "datacenter", "got a list, want a string"},
		{"block.hcl", "limits = 5\n", "limits", "got 5, want a block"},
		{"block.json", `{"ports": "8500"}`, "ports", `got "8500", want a block`},
		{"list.hcl", "retry_join = \"10.0.0.1\"\n", "retry_join", `got "10.0.0.1", want a list`},
		{"list-elem.hcl", `recursors = ["1.1.1.1", false]`, "recursors[1]", "got false, want a string"},
		{"map-value.hcl", "node_meta { rack = [1] }\n", "node_meta[rack]", "got a list, want a string"},
		{"map.hcl", "dns_config { service_ttl = \"5s\" }\n", "dns_config.service_ttl", `got "5s", want a block`},
		{"block-for-int.json", `{"ports": {"dns": {"udp": 1}}}`, "ports.dns", "got a block, want a whole number"},
		{"block-for-bool.hcl", "server = { a = 1 }\n", "server", "got a block, want true or false"},
		{"twice.hcl", "ports { dns = 53 }\nports { http = 80 }\n", "ports", "given more than once; write one block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.name, tc.content)
			c := Default()
			err := LoadFile(path, &c)
			if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != tc.key || fe.Reason != tc.reason {
				t.Fatalf("got %v, want %s: %s", err, tc.key, tc.reason)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("got %q, want it to name the file", err)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Errorf("got %+v after the error, want the config unchanged", c)
			}
		})
	}
}

// TestLoadFileLenientTypes: what hcl has always read stays readable: a
// quoted whole number for a number, a number for a string, a whole number
// for a rate.
func TestLoadFileLenientTypes(t *testing.T) {
	c := Default()
	content := `{"ports": {"dns": "8653"}, "datacenter": 7, "limits": {"rpc_rate": 50}, "node_meta": {"rack": 2}}`
	if err := LoadFile(writeConfig(t, "lenient.json", content), &c); err != nil {
		t.Fatal(err)
	}
	if c.Ports.DNS != 8653 || c.Datacenter != "7" || c.NodeMeta["rack"] != "2" {
		t.Errorf("got ports.dns %d, datacenter %q, node_meta %v", c.Ports.DNS, c.Datacenter, c.NodeMeta)
	}
}

// TestLoadFileBlockOfBlocks: a block holding two blocks loads whole, in
// JSON (Consul's usual TLS config, which hcl flattens into two labelled
// items) and in HCL with labels; the same block written plainly beside a
// labelled one is refused, as hcl's decoder would keep only one of them.
func TestLoadFileBlockOfBlocks(t *testing.T) {
	for _, name := range []string{"tls.json", "tls-labels.hcl"} {
		t.Run(name, func(t *testing.T) {
			content := `{"tls": {"defaults": {"verify_incoming": true, "tls_min_version": "TLSv1_3"}, "https": {"verify_incoming": false}}}`
			if strings.HasSuffix(name, ".hcl") {
				content = "tls \"defaults\" {\n  verify_incoming = true\n  tls_min_version = \"TLSv1_3\"\n}\ntls \"https\" {\n  verify_incoming = false\n}\n"
			}
			c := Default()
			if err := LoadFile(writeConfig(t, name, content), &c); err != nil {
				t.Fatalf("LoadFile: %v", err)
			}
			if !c.TLS.RPC.VerifyIncoming || c.TLS.RPC.MinVersion != "TLSv1_3" {
				t.Errorf("tls.defaults not applied to internal_rpc: %+v", c.TLS.RPC)
			}
			if c.TLS.HTTPS.VerifyIncoming || c.TLS.HTTPS.MinVersion != "TLSv1_3" {
				t.Errorf("https: got %+v, want verify_incoming false over the defaults, tls_min_version from them", c.TLS.HTTPS)
			}
		})
	}
	t.Run("plain-and-labelled.hcl", func(t *testing.T) {
		content := "tls {\n  defaults { verify_incoming = true }\n}\ntls \"https\" {\n  verify_incoming = false\n}\n"
		c := Default()
		err := LoadFile(writeConfig(t, "mixed.hcl", content), &c)
		if fe, ok := errors.AsType[*FieldError](err); !ok || fe.Field != "tls" || fe.Reason != "given more than once; write one block" {
			t.Fatalf("got %v, want tls given more than once", err)
		}
	})
}
