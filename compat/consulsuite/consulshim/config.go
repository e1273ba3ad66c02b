package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
)

// testutilConfig is the part of the JSON config that Consul's
// sdk/testutil writes (TestServerConfig) which the shim reads. Every other
// key of the file is reported as ignored.
type testutilConfig struct {
	NodeName    string            `json:"node_name"`
	NodeID      string            `json:"node_id"`
	NodeMeta    map[string]string `json:"node_meta"`
	Performance *struct {
		RaftMultiplier int `json:"raft_multiplier"`
	} `json:"performance"`
	Bootstrap  bool     `json:"bootstrap"`
	Server     bool     `json:"server"`
	RetryJoin  []string `json:"retry_join"`
	DataDir    string   `json:"data_dir"`
	Datacenter string   `json:"datacenter"`
	PrimaryDC  string   `json:"primary_datacenter"`
	LogLevel   string   `json:"log_level"`
	Bind       string   `json:"bind_addr"`
	Addresses  *struct {
		HTTP string `json:"http"`
	} `json:"addresses"`
	Ports *struct {
		DNS     int `json:"dns"`
		HTTP    int `json:"http"`
		HTTPS   int `json:"https"`
		SerfLan int `json:"serf_lan"`
		SerfWan int `json:"serf_wan"`
		Server  int `json:"server"`
	} `json:"ports"`
	ACL struct {
		Enabled       bool         `json:"enabled"`
		TokenTTL      string       `json:"token_ttl"`
		DefaultPolicy string       `json:"default_policy"`
		Tokens        tokensConfig `json:"tokens"`
	} `json:"acl"`
	Encrypt             string         `json:"encrypt"`
	CAFile              string         `json:"ca_file"`
	CertFile            string         `json:"cert_file"`
	KeyFile             string         `json:"key_file"`
	VerifyIncoming      bool           `json:"verify_incoming"`
	VerifyIncomingHTTPS bool           `json:"verify_incoming_https"`
	EnableScriptChecks  bool           `json:"enable_script_checks"`
	Connect             map[string]any `json:"connect"`
	EnableDebug         bool           `json:"enable_debug"`
	SkipLeaveOnInt      bool           `json:"skip_leave_on_interrupt"`
	Autopilot           *struct {
		ServerStabilizationTime string `json:"server_stabilization_time"`
	} `json:"autopilot"`
}

// tokensConfig is testutil's acl.tokens block (initial_management under
// its pre-1.11 name, master).
type tokensConfig struct {
	Default           string `json:"default"`
	Agent             string `json:"agent"`
	InitialManagement string `json:"master"`
}

// readKeys are the keys (dotted paths) of testutil's config that the shim
// translates; the others it reports as ignored.
var readKeys = map[string]bool{
	"node_name": true, "node_id": true, "node_meta": true, "performance.raft_multiplier": true,
	"bootstrap": true, "server": true, "retry_join": true, "data_dir": true, "datacenter": true, "primary_datacenter": true,
	"log_level": true, "bind_addr": true, "addresses.http": true,
	"ports.dns": true, "ports.http": true, "ports.https": true, "ports.serf_lan": true,
	"ports.serf_wan": true, "ports.server": true,
	"acl.enabled": true, "acl.token_ttl": true, "acl.default_policy": true,
	"acl.tokens.default": true, "acl.tokens.agent": true, "acl.tokens.master": true,
	"encrypt": true, "ca_file": true, "cert_file": true, "key_file": true,
	"verify_incoming": true, "verify_incoming_https": true, "enable_script_checks": true,
	"connect": true, "enable_debug": true, "skip_leave_on_interrupt": true,
	"autopilot.server_stabilization_time": true,
}

// plan is what the shim runs: cairn's config file, and what the HTTP front
// does.
type plan struct {
	// cairn is cairn's config file, as JSON.
	cairn map[string]any
	// frontAddr is the address testutil expects the HTTP API on ("" when
	// HTTP is off); a unix socket's path with frontUnix.
	frontAddr string
	frontUnix bool
	// cairnUnix is the path of the unix socket cairn's own HTTP API
	// listens on behind a front on a unix socket; "" for TCP.
	cairnUnix string
	// fakeCARoots answers testutil's wait for Connect's CA (cairn has no
	// Connect) the first time it is asked.
	fakeCARoots bool
	// tokens maps each token of the config that cairn refuses (cairn
	// takes only UUIDs) to the UUID that stands for it in cairn.
	tokens map[string]string
	// notes say what was ignored or changed, for the log.
	notes []string
}

// translate turns testutil's config file into cairn's. httpPort is the
// port cairn's own HTTP API listens on, behind the front.
func translate(raw []byte, httpPort int) (*plan, error) {
	var tc testutilConfig
	if err := json.Unmarshal(raw, &tc); err != nil {
		return nil, fmt.Errorf("parse testutil config: %w", err)
	}
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("parse testutil config: %w", err)
	}
	p := &plan{tokens: map[string]string{}}
	for _, k := range ignoredKeys(all, "") {
		p.notes = append(p.notes, "ignored "+k+": cairn has no such setting")
	}

	c := map[string]any{
		"node_name": tc.NodeName,
		"data_dir":  tc.DataDir,
		"server":    tc.Server,
		// Consul's default client_addr; the front is the one that
		// listens where testutil looks.
		"client_addr":             "127.0.0.1",
		"skip_leave_on_interrupt": tc.SkipLeaveOnInt,
		// Consul's servers are the service "consul"; the suite looks them
		// up by it.
		"server_service_name": "consul",
		// Consul's default: its gauges carry the host name
		// (consul.<host>.runtime.alloc_bytes).
		"telemetry": map[string]any{"disable_hostname": false},
	}
	setStr := func(key, v string) {
		if v != "" {
			c[key] = v
		}
	}
	setStr("node_id", tc.NodeID)
	setStr("datacenter", tc.Datacenter)
	setStr("bind_addr", tc.Bind)
	setStr("encrypt", tc.Encrypt)
	if tc.LogLevel != "" {
		c["log_level"] = logLevel(tc.LogLevel)
	}
	if len(tc.NodeMeta) > 0 {
		c["node_meta"] = tc.NodeMeta
	}
	if len(tc.RetryJoin) > 0 {
		c["retry_join"] = tc.RetryJoin
	}
	if tc.Bootstrap {
		if tc.Server {
			c["bootstrap_expect"] = 1
		} else {
			p.notes = append(p.notes, "ignored bootstrap: the agent is not a server")
		}
	}
	if tc.EnableScriptChecks {
		c["enable_script_checks"] = true
	}
	if tc.EnableDebug {
		c["enable_debug"] = true
	}
	if tc.Performance != nil && tc.Performance.RaftMultiplier > 0 {
		c["performance"] = map[string]any{"raft_multiplier": tc.Performance.RaftMultiplier}
	}
	if tc.Autopilot != nil && tc.Autopilot.ServerStabilizationTime != "" {
		c["autopilot"] = map[string]any{"server_stabilization_time": tc.Autopilot.ServerStabilizationTime}
	}
	if err := p.ports(&tc, c, httpPort); err != nil {
		return nil, err
	}
	p.acl(&tc, c)
	p.tls(&tc, c)
	if enabled, _ := tc.Connect["enabled"].(bool); enabled && tc.Server {
		p.fakeCARoots = true
	}
	p.cairn = c
	return p, nil
}

// ports maps testutil's ports: HTTP moves behind the front; -1 (Consul's
// "off") becomes 0 (a free port) where cairn cannot turn the listener off.
func (p *plan) ports(tc *testutilConfig, c map[string]any, httpPort int) error {
	if tc.Ports == nil {
		return fmt.Errorf("testutil config has no ports")
	}
	out := map[string]any{}
	for _, pt := range []struct {
		key string
		v   int
	}{{"dns", tc.Ports.DNS}, {"serf_lan", tc.Ports.SerfLan}, {"serf_wan", tc.Ports.SerfWan}, {"server", tc.Ports.Server}} {
		if pt.v < 0 {
			p.notes = append(p.notes, fmt.Sprintf("ports.%s -1: cairn cannot turn it off; a free port instead", pt.key))
			out[pt.key] = 0
			continue
		}
		out[pt.key] = pt.v
	}
	http := ""
	if tc.Addresses != nil {
		http = tc.Addresses.HTTP
	}
	switch {
	case tc.Ports.HTTP < 0:
		out["http"] = -1
	case strings.HasPrefix(http, "unix://"):
		// cairn serves its API on a socket beside the one testutil
		// dials, where the front listens.
		p.frontAddr, p.frontUnix = strings.TrimPrefix(http, "unix://"), true
		p.cairnUnix = p.frontAddr + ".cairn"
		c["addresses"] = map[string]any{"http": "unix://" + p.cairnUnix}
		out["http"] = httpPort
	default:
		host := "127.0.0.1"
		if http != "" {
			if net.ParseIP(http) == nil {
				return fmt.Errorf("addresses.http %q: not an IP address", http)
			}
			host = http
		}
		p.frontAddr = net.JoinHostPort(host, fmt.Sprint(tc.Ports.HTTP))
		out["http"] = httpPort
	}
	if tc.CertFile != "" && tc.KeyFile != "" && tc.Ports.HTTPS > 0 {
		out["https"] = tc.Ports.HTTPS
	} else {
		out["https"] = -1
	}
	c["ports"] = out
	return nil
}

// uuidRE is the form cairn takes for tokens it is configured with.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// acl maps the acl block. Consul takes any string as a configured token
// (its tests use "root"); cairn takes UUIDs only, so each other string is
// given a UUID derived from it, which the front puts in its place in
// requests.
func (p *plan) acl(tc *testutilConfig, c map[string]any) {
	a := tc.ACL
	if !a.Enabled && a.Tokens == (tokensConfig{}) {
		return
	}
	// Consul shows tokens' secrets to acl:write holders; cairn does only
	// with this knob (its default keeps hashes).
	block := map[string]any{"enabled": a.Enabled, "tokens_secret_readable": true}
	if tc.PrimaryDC != "" {
		block["primary_datacenter"] = tc.PrimaryDC
	}
	if a.DefaultPolicy != "" {
		block["default_policy"] = a.DefaultPolicy
	} else {
		// Consul's default; cairn's is deny.
		block["default_policy"] = "allow"
	}
	if a.TokenTTL != "" {
		block["token_ttl"] = a.TokenTTL
	}
	tokens := map[string]any{}
	for _, t := range []struct{ key, v string }{
		{"initial_management", a.Tokens.InitialManagement}, {"agent", a.Tokens.Agent}, {"default", a.Tokens.Default},
	} {
		if t.v == "" {
			continue
		}
		tokens[t.key] = p.token(t.v)
	}
	if len(tokens) > 0 {
		block["tokens"] = tokens
	}
	c["acl"] = block
}

// token returns the UUID cairn knows secret by.
func (p *plan) token(secret string) string {
	if uuidRE.MatchString(secret) {
		return secret
	}
	if u, ok := p.tokens[secret]; ok {
		return u
	}
	h := sha256.Sum256([]byte("consulshim token " + secret))
	h[6] = h[6]&0x0f | 0x40 // version 4
	h[8] = h[8]&0x3f | 0x80 // variant RFC 4122
	u := fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	p.tokens[secret] = u
	p.notes = append(p.notes, fmt.Sprintf("token %q is not a UUID, which cairn requires: %s stands for it", secret, u))
	return u
}

// tls maps Consul's top-level (pre-1.12) TLS keys onto cairn's tls.https
// block: the HTTPS API is what the suite's TLS tests talk to, so the
// server port (RPC) of the single test server stays without TLS.
func (p *plan) tls(tc *testutilConfig, c map[string]any) {
	if tc.CAFile == "" && tc.CertFile == "" && tc.KeyFile == "" {
		return
	}
	d := map[string]any{}
	for _, f := range []struct{ key, v string }{{"ca_file", tc.CAFile}, {"cert_file", tc.CertFile}, {"key_file", tc.KeyFile}} {
		if f.v != "" {
			d[f.key] = f.v
		}
	}
	if tc.VerifyIncoming || tc.VerifyIncomingHTTPS {
		d["verify_incoming"] = true
	}
	c["tls"] = map[string]any{"https": d}
	p.notes = append(p.notes, "TLS files go to tls.https only: the server port stays without TLS")
}

// logLevel maps Consul's log levels onto cairn's.
func logLevel(l string) string {
	switch strings.ToLower(l) {
	case "trace", "debug":
		return "debug"
	case "warn", "warning":
		return "warn"
	case "err", "error":
		return "error"
	}
	return "info"
}

// ignoredKeys lists the keys of m (dotted, under prefix) that the shim
// does not read and that hold something other than a zero value.
func ignoredKeys(m map[string]any, prefix string) []string {
	var out []string
	for k, v := range m {
		key := prefix + k
		if readKeys[key] {
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			out = append(out, ignoredKeys(sub, key+".")...)
			continue
		}
		if isZero(v) {
			continue
		}
		out = append(out, key)
	}
	sort.Strings(out)
	return out
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	}
	return false
}
