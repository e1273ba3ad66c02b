package config

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// Limits is the limits block: caps that keep one client from taking what
// every client needs.
type Limits struct {
	// HTTPMaxConnsPerClient caps the HTTP connections one client address
	// may hold (limits.http_max_conns_per_client). 0 means no cap.
	// Default 200, Consul's.
	HTTPMaxConnsPerClient int
	// HTTPMaxConns caps the HTTP connections of all clients together
	// (limits.http_max_conns), so they cannot take the file descriptors
	// DNS, Raft and gossip need. 0 (the default) derives it from the
	// process's file descriptor limit at start.
	HTTPMaxConns int
	// RPCRate limits the writes one client agent may send a server, per
	// second (limits.rpc_rate); over it a write fails with 429 and the
	// agent retries later. Servers forwarding writes are not limited.
	// 0 (the default) means no limit, as Consul's.
	RPCRate float64
	// RPCMaxBurst is how many writes a client may send at once before
	// RPCRate applies (limits.rpc_max_burst). Default 1000, Consul's.
	RPCMaxBurst int
	// RPCMaxConnsPerClient caps the connections one client address may
	// hold to a server's port (limits.rpc_max_conns_per_client); more are
	// closed as they are accepted. A client agent holds one per server it
	// talks to. 0 means no cap. Default 100, Consul's.
	RPCMaxConnsPerClient int
	// RPCMaxCallsPerClient caps the calls one client address may have in
	// flight on a server over all its connections, blocking queries
	// included (limits.rpc_max_calls_per_client); more are refused at
	// once and the agent tries another server, then answers 429. 0 means
	// no cap. Default 2048: ten times what one local address may hold
	// through an agent's HTTP API (http_max_conns_per_client).
	RPCMaxCallsPerClient int
	// KVMaxValueSize is the largest value a key/value entry may hold, in
	// bytes (limits.kv_max_value_size): servers refuse larger writes, and
	// the HTTP API answers them with a 413. Default 512 KiB, Consul's; at
	// most 4 MiB.
	KVMaxValueSize int
	// DataDirMinFreeBytes is the free space in the data dir below which
	// the agent warns, every minute while it lasts
	// (limits.data_dir_min_free_bytes); cairn_data_dir_free_bytes reports
	// it either way. A server whose disk fills can no longer write its
	// Raft log and takes no part in writes until room is back. 0 means no
	// warning. Default 256 MiB: four Raft log segments of 64 MiB, each
	// preallocated whole when the log moves to it.
	DataDirMinFreeBytes int
}

// DefaultLimits returns the defaults documented on Limits.
func DefaultLimits() Limits {
	return Limits{
		HTTPMaxConnsPerClient: 200,
		RPCMaxBurst:           1000,
		RPCMaxConnsPerClient:  100,  // rpc.DefaultServerConfig's MaxConnsPerClient
		RPCMaxCallsPerClient:  2048, // and MaxCallsPerClient
		KVMaxValueSize:        catalog.DefaultKVMaxValueSize,
		DataDirMinFreeBytes:   256 << 20,
	}
}

// HTTPConfig is the http_config block.
type HTTPConfig struct {
	// AllowedHosts are the host names, besides IP addresses, localhost
	// and the node name, that the HTTP API answers to
	// (http_config.allowed_hosts): a Host header naming another is
	// refused, against DNS rebinding. "*" allows any. Default none.
	AllowedHosts []string
	// ReadTimeout bounds reading a request, body included
	// (http_config.read_timeout), so slow clients cannot hold
	// connections. Default 10s.
	ReadTimeout time.Duration
}

type fileLimits struct {
	HTTPMaxConnsPerClient   *int     `hcl:"http_max_conns_per_client"`
	HTTPMaxConns            *int     `hcl:"http_max_conns"`
	DNSMaxTCPConns          *int     `hcl:"dns_max_tcp_conns"`
	DNSMaxTCPConnsPerClient *int     `hcl:"dns_max_tcp_conns_per_client"`
	RPCRate                 *float64 `hcl:"rpc_rate"`
	RPCMaxBurst             *int     `hcl:"rpc_max_burst"`
	RPCMaxConnsPerClient    *int     `hcl:"rpc_max_conns_per_client"`
	RPCMaxCallsPerClient    *int     `hcl:"rpc_max_calls_per_client"`
	KVMaxValueSize          *int     `hcl:"kv_max_value_size"`
	DataDirMinFreeBytes     *int     `hcl:"data_dir_min_free_bytes"`
}

type fileHTTPConfig struct {
	AllowedHosts []string `hcl:"allowed_hosts"`
	ReadTimeout  *string  `hcl:"read_timeout"`
}

type fileRRL struct {
	Enabled            *bool `hcl:"enabled"`
	ResponsesPerSecond *int  `hcl:"responses_per_second"`
	AllPerSecond       *int  `hcl:"all_per_second"`
	MinAmplification   *int  `hcl:"min_amplification"`
	Slip               *int  `hcl:"slip"`
	IPv4PrefixLength   *int  `hcl:"ipv4_prefix_length"`
	IPv6PrefixLength   *int  `hcl:"ipv6_prefix_length"`
}

func (f *fileLimits) apply(c *Config) {
	setIf(&c.Limits.HTTPMaxConnsPerClient, f.HTTPMaxConnsPerClient)
	setIf(&c.Limits.HTTPMaxConns, f.HTTPMaxConns)
	setIf(&c.Resolver.MaxTCPConns, f.DNSMaxTCPConns)
	setIf(&c.Resolver.MaxTCPConnsPerClient, f.DNSMaxTCPConnsPerClient)
	setIf(&c.Limits.RPCRate, f.RPCRate)
	setIf(&c.Limits.RPCMaxBurst, f.RPCMaxBurst)
	setIf(&c.Limits.RPCMaxConnsPerClient, f.RPCMaxConnsPerClient)
	setIf(&c.Limits.RPCMaxCallsPerClient, f.RPCMaxCallsPerClient)
	setIf(&c.Limits.KVMaxValueSize, f.KVMaxValueSize)
	setIf(&c.Limits.DataDirMinFreeBytes, f.DataDirMinFreeBytes)
}

func (f *fileHTTPConfig) apply(c *Config) error {
	if f.AllowedHosts != nil {
		c.HTTP.AllowedHosts = f.AllowedHosts
	}
	if f.ReadTimeout != nil {
		d, err := time.ParseDuration(*f.ReadTimeout)
		if err != nil {
			return &FieldError{Field: "http_config.read_timeout", Reason: fmt.Sprintf("%q is not a duration such as \"10s\"", *f.ReadTimeout)}
		}
		c.HTTP.ReadTimeout = d
	}
	return nil
}

func (f *fileRRL) apply(c *Config) {
	r := &c.Resolver.RRL
	setIf(&r.Enabled, f.Enabled)
	setIf(&r.ResponsesPerSecond, f.ResponsesPerSecond)
	setIf(&r.AllPerSecond, f.AllPerSecond)
	setIf(&r.MinAmplification, f.MinAmplification)
	setIf(&r.Slip, f.Slip)
	setIf(&r.IPv4PrefixLength, f.IPv4PrefixLength)
	setIf(&r.IPv6PrefixLength, f.IPv6PrefixLength)
}

// applyCookies applies dns_config's answer_cookie and cookie_secret, as
// Unbound names them: DNS Cookies answered (resolver.Config.Cookies), and
// the secret server cookies are made with, 32 hex digits (16 bytes), the
// same on every agent answering for one address.
func (f *fileDNS) applyCookies(c *Config) error {
	setIf(&c.Resolver.Cookies, f.AnswerCookie)
	if f.CookieSecret == nil {
		return nil
	}
	b, err := hex.DecodeString(*f.CookieSecret)
	if err != nil || len(b) != 16 {
		return &FieldError{Field: "dns_config.cookie_secret", Reason: "must be 32 hex digits (16 bytes), such as `openssl rand -hex 16` prints"}
	}
	c.Resolver.CookieSecret = b
	return nil
}

// validateLimits reports the bad fields of the limits and http_config
// blocks (the resolver's are validated with it: rrl, dns_max_tcp_conns, dns_max_tcp_conns_per_client).
func (c *Config) validateLimits(bad func(field, format string, args ...any)) {
	l := c.Limits
	if l.HTTPMaxConnsPerClient < 0 {
		bad("limits.http_max_conns_per_client", "must be 0 (no cap) or more, got %d", l.HTTPMaxConnsPerClient)
	}
	if l.HTTPMaxConns < 0 {
		bad("limits.http_max_conns", "must be 0 (derived from the file descriptor limit) or more, got %d", l.HTTPMaxConns)
	}
	if l.RPCRate < 0 {
		bad("limits.rpc_rate", "must be 0 (no limit) or more, got %v", l.RPCRate)
	}
	if l.RPCRate > 0 && l.RPCMaxBurst < 1 {
		bad("limits.rpc_max_burst", "must be at least 1 with rpc_rate, got %d", l.RPCMaxBurst)
	}
	if l.RPCMaxConnsPerClient < 0 {
		bad("limits.rpc_max_conns_per_client", "must be 0 (no cap) or more, got %d", l.RPCMaxConnsPerClient)
	}
	if l.RPCMaxCallsPerClient < 0 {
		bad("limits.rpc_max_calls_per_client", "must be 0 (no cap) or more, got %d", l.RPCMaxCallsPerClient)
	}
	if n := l.KVMaxValueSize; n < 1 || n > catalog.MaxKVValueSize {
		bad("limits.kv_max_value_size", "must be between 1 and %d bytes, got %d", catalog.MaxKVValueSize, n)
	}
	if l.DataDirMinFreeBytes < 0 {
		bad("limits.data_dir_min_free_bytes", "must be 0 (no warning) or more, got %d", l.DataDirMinFreeBytes)
	}
	if c.HTTP.ReadTimeout <= 0 {
		bad("http_config.read_timeout", "must be positive, got %s", c.HTTP.ReadTimeout)
	}
}
