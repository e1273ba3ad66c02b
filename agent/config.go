package agent

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/resolver"
)

// Config is everything one agent needs. DefaultConfig gives a usable value;
// LoadConfigFile and the CLI's flags change it; Validate checks it whole.
type Config struct {
	// NodeName names this node in the catalog and in DNS
	// (<node>.node.<dc>.<domain>). Default: the host name, cut at the first dot.
	NodeName string
	// Datacenter this agent belongs to. Default "dc1".
	Datacenter string
	// NodeMeta is free-form metadata of this node, answered in DNS as TXT
	// records "key=value" of <node>.node names. Default none.
	NodeMeta map[string]string
	// Domain is the DNS zone cairn answers for. Default "cluster.".
	Domain string
	// BindAddr is the address cluster traffic (server RPC, later gossip)
	// binds to. Default 127.0.0.1: nothing listens beyond loopback unless
	// configured.
	BindAddr string
	// AdvertiseAddr is the address other nodes and DNS answers use for this
	// node. Default: BindAddr, or when that is unspecified (0.0.0.0) the
	// first private IPv4 address of the machine.
	AdvertiseAddr string
	// ClientAddr is the address the DNS and HTTP listeners bind to.
	// Default 127.0.0.1.
	ClientAddr string
	// Ports of the listeners; 0 picks a free port (for tests).
	Ports Ports
	// DataDir holds the Raft log, snapshots and the agent's own services.
	// Required unless Dev is set.
	DataDir string
	// Dev runs a server of a datacenter of one (BootstrapExpect 1) with
	// short Raft timers, needing no configuration: nothing is written to
	// disk unless DataDir is also given. Clients can join it.
	Dev bool
	// Server makes this agent a server holding the catalog (Raft). Without
	// it the agent is a client: it finds the servers in LAN gossip and sends
	// them every catalog read and write. Dev implies it.
	Server bool
	// LogLevel is one of debug, info, warn, error. Default "info".
	LogLevel string
	// AltDomain is a second zone answered like Domain (for a migration, or
	// a name users know from elsewhere). Default none.
	AltDomain string
	// Recursors are the upstream resolvers names outside cairn's zones are
	// forwarded to (IP or IP:port). None (the default) answers REFUSED:
	// cairn is never an open resolver.
	Recursors []string
	// DNS tunes answers: TTLs, limits, negative caching, recursion.
	DNS DNSConfig

	// BootstrapExpect is how many servers must have seen each other in LAN
	// gossip before they bootstrap one Raft configuration together. 0 (the
	// default) bootstraps a server alone when it has no Join (the first
	// server of a datacenter), and otherwise joins an existing cluster
	// whose leader adds it, as in Consul; more than 1 requires Server and
	// is not allowed with Dev (a datacenter of one server).
	BootstrapExpect int
	// Join lists gossip addresses ("host" or "host:port", the port defaulting
	// to Ports.SerfLAN) of agents already in the cluster. Default none.
	Join []string
	// JoinWAN lists WAN gossip addresses ("host" or "host:port", the port
	// defaulting to Ports.SerfWAN) of servers of other datacenters (or of
	// this one) already in the WAN pool. Servers only. Default none.
	JoinWAN []string
	// RetryInterval is the longest wait between two attempts to join, the
	// LAN pool's and the WAN pool's: the first retry comes after 1s (or
	// RetryInterval when shorter), each next one after twice the wait
	// before, up to RetryInterval. Default 30s.
	RetryInterval time.Duration
	// RetryMax is how many join attempts are made before giving up, for
	// each pool; 0 (the default) retries forever.
	RetryMax int
	// EncryptKey is the base64 of a 16, 24 or 32 byte AES key that encrypts
	// gossip; every agent of a cluster needs the same. Default none.
	EncryptKey string
	// ReconnectTimeout is how long a failed member is remembered: its node
	// stays in the catalog with a critical gossip check (out of DNS
	// answers) until then, and is deregistered after. Default 72h, like
	// Consul's reconnect_timeout; at least 1m.
	ReconnectTimeout time.Duration

	// EnableScriptChecks allows checks that run a command (Args). Default
	// off: anyone who can reach the HTTP API could otherwise run programs
	// as the agent's user.
	EnableScriptChecks bool
	// CheckUpdateInterval rate-limits pushing a check whose output changed
	// but not its status: at most once per interval. Default 5m (Consul's
	// check_update_interval); 0 pushes every change.
	CheckUpdateInterval time.Duration
	// AEInterval is the period of the anti-entropy full sync of this
	// node's services and checks, in clusters of up to 128 agents (longer
	// beyond, growing with the logarithm of the size). Changes are pushed
	// at once regardless; the full sync repairs what a push missed or what
	// was changed behind the agent's back. Default 1m (Consul's
	// ae_interval); at least 1s.
	AEInterval time.Duration
}

// DNSConfig tunes the DNS interface. For MaxUDPSize, RecursorTimeout,
// RecursorStrategy and UnhealthyAnswer the zero value means the default;
// see DefaultConfig.
type DNSConfig struct {
	// NodeTTL is the TTL of node records. Default 0, like Consul: every
	// question reaches the agent, which answers from memory.
	NodeTTL time.Duration
	// PTRTTL is the TTL of reverse-lookup (PTR) records. Default 0.
	PTRTTL time.Duration
	// ServiceTTL maps a service name, or a prefix ending in '*' ("*",
	// "db*"), to the TTL of its records; the most specific key wins.
	// Default: none (0).
	ServiceTTL map[string]time.Duration
	// OnlyPassing leaves instances with a warning check out of answers.
	// Default false: warning counts as healthy.
	OnlyPassing bool
	// UnhealthyAnswer answers a service that exists but has no healthy
	// instance: "nodata" (default: NOERROR, no records, the SOA),
	// "nxdomain" (Consul's behaviour) or "all" (fail open: every instance).
	UnhealthyAnswer string
	// UDPAnswerLimit caps the answer records of a UDP reply, ARecordLimit
	// the A/AAAA records of any reply. 0 (default) means no cap beyond the
	// message size.
	UDPAnswerLimit int
	ARecordLimit   int
	// MaxUDPSize is the largest UDP reply, advertised in EDNS0. Default 1232.
	MaxUDPSize int
	// DisableTruncate stops setting TC on UDP replies cut to fit, so
	// clients do not retry over TCP (Consul's enable_truncate = false).
	// Default false: TC is set.
	DisableTruncate bool
	// RecursorTimeout bounds one upstream exchange. Default 2s.
	RecursorTimeout time.Duration
	// MaxStale is how long the agent keeps answering a cached name from its
	// last known data while no server can be reached (serve-stale, RFC
	// 8767). Default 72h.
	MaxStale time.Duration
	// CacheMaxEntries bounds the names of each kind (services, nodes) the
	// agent's DNS cache holds; the least recently asked is dropped first.
	// An entry costs its answer's memory and no watch of its own (the
	// cache follows one change feed). Default 10,000.
	CacheMaxEntries int
	// CacheIdleTimeout drops a cached name not asked for this long, so
	// that forgotten names stop being refetched on changes. Default 10m.
	CacheIdleTimeout time.Duration
	// RecursorStrategy is "sequential" (default: in order) or "random".
	RecursorStrategy string
	// SOA timers in seconds. MinTTL is also the TTL of negative answers.
	// Defaults: refresh 3600, retry 600, expire 86400, min_ttl 5.
	SOA SOAConfig
	// NodeMetaTXT answers TXT questions for nodes with their metadata, and
	// AdditionalNodeMetaTXT adds those records to A/AAAA answers. Both
	// default on.
	NodeMetaTXT           bool
	AdditionalNodeMetaTXT bool
}

// SOAConfig are the SOA timers, in seconds.
type SOAConfig struct {
	Refresh, Retry, Expire, MinTTL uint32
}

// Ports are the TCP/UDP ports the agent listens on.
type Ports struct {
	DNS  int // UDP and TCP, default 8600
	HTTP int // default 8500
	// Server is the server RPC port, default 8300: a server carries Raft
	// and RPC on it, at AdvertiseAddr:Server. Clients open none.
	Server int
	// SerfLAN is the LAN gossip port (UDP and TCP) of every agent,
	// default 8301.
	SerfLAN int
	// SerfWAN is the WAN gossip port (UDP and TCP) of a server, default
	// 8302. Clients open none.
	SerfWAN int
}

// DefaultConfig returns the configuration of an agent started with no flags.
func DefaultConfig() Config {
	return Config{
		NodeName:            defaultNodeName(),
		Datacenter:          "dc1",
		Domain:              "cluster.",
		BindAddr:            "127.0.0.1",
		ClientAddr:          "127.0.0.1",
		Ports:               Ports{DNS: 8600, HTTP: 8500, Server: 8300, SerfLAN: 8301, SerfWAN: 8302},
		LogLevel:            "info",
		RetryInterval:       30 * time.Second,
		ReconnectTimeout:    72 * time.Hour,
		CheckUpdateInterval: 5 * time.Minute,
		AEInterval:          time.Minute,
		DNS: DNSConfig{
			MaxUDPSize:            1232,
			RecursorTimeout:       2 * time.Second,
			RecursorStrategy:      "sequential",
			UnhealthyAnswer:       "nodata",
			SOA:                   SOAConfig{Refresh: 3600, Retry: 600, Expire: 86400, MinTTL: 5},
			NodeMetaTXT:           true,
			AdditionalNodeMetaTXT: true,
		},
	}
}

func defaultNodeName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "cairn"
	}
	h, _, _ = strings.Cut(h, ".")
	return strings.ToLower(h)
}

// FieldError names a configuration field and why its value is rejected.
type FieldError struct {
	Field  string // the file key / flag name, e.g. "datacenter"
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("config %s: %s", e.Field, e.Reason) }

// Validate checks every field and returns all problems at once, joined.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	if r := labelProblem(c.NodeName); r != "" {
		bad("node_name", "%q %s", c.NodeName, r)
	}
	if r := labelProblem(c.Datacenter); r != "" {
		bad("datacenter", "%q %s", c.Datacenter, r)
	} else if reservedLabels[strings.ToLower(c.Datacenter)] {
		bad("datacenter", "%q is a keyword of DNS names (service, node, addr, query) and cannot name a datacenter", c.Datacenter)
	}
	if err := checkDomain(c.Domain); err != "" {
		bad("domain", "%q %s", c.Domain, err)
	}
	for _, a := range []struct{ field, value string }{
		{"bind_addr", c.BindAddr}, {"client_addr", c.ClientAddr},
	} {
		if _, err := netip.ParseAddr(a.value); err != nil {
			bad(a.field, "%q is not an IP address", a.value)
		}
	}
	if c.AdvertiseAddr != "" {
		if ip, err := netip.ParseAddr(c.AdvertiseAddr); err != nil || ip.IsUnspecified() {
			bad("advertise_addr", "%q is not a usable IP address", c.AdvertiseAddr)
		}
	}
	for _, p := range []struct {
		field string
		value int
	}{{"ports.dns", c.Ports.DNS}, {"ports.http", c.Ports.HTTP}, {"ports.server", c.Ports.Server}, {"ports.serf_lan", c.Ports.SerfLAN}, {"ports.serf_wan", c.Ports.SerfWAN}} {
		if p.value < 0 || p.value > 65535 {
			bad(p.field, "must be between 0 and 65535, got %d", p.value)
		}
	}
	if c.DataDir == "" && !c.Dev {
		bad("data_dir", "is required unless -dev is set")
	}
	if _, err := ParseLogLevel(c.LogLevel); err != nil {
		bad("log_level", "%v", err)
	}
	if err := catalog.ValidateMeta("node_meta", c.NodeMeta); err != nil {
		var fe *catalog.FieldError
		if errors.As(err, &fe) {
			bad(fe.Field, "%s", fe.Reason)
		}
	}
	if c.AltDomain != "" {
		if r := checkDomain(c.AltDomain); r != "" {
			bad("alt_domain", "%q %s", c.AltDomain, r)
		} else if strings.EqualFold(strings.TrimSuffix(c.AltDomain, "."), strings.TrimSuffix(c.Domain, ".")) {
			bad("alt_domain", "%q is the same as domain", c.AltDomain)
		}
	}
	for i, r := range c.Recursors {
		if _, err := resolver.RecursorAddr(r); err != nil {
			bad(fmt.Sprintf("recursors[%d]", i), "%v", err)
		}
	}
	errs = append(errs, c.DNS.validate()...)
	errs = append(errs, c.validateCluster()...)
	return errors.Join(errs...)
}

func (c *Config) validateCluster() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	switch {
	case c.BootstrapExpect < 0:
		bad("bootstrap_expect", "must not be negative, got %d", c.BootstrapExpect)
	case c.BootstrapExpect > 1 && !c.Server:
		bad("bootstrap_expect", "requires server mode (-server)")
	case c.BootstrapExpect > 1 && c.Dev:
		bad("bootstrap_expect", "cannot be combined with -dev, which is a cluster of one")
	}
	if len(c.Join) > 0 && c.Dev {
		bad("retry_join", "cannot be combined with -dev, which is a cluster of one")
	}
	for i, j := range c.Join {
		if strings.TrimSpace(j) == "" {
			bad(fmt.Sprintf("retry_join[%d]", i), "must not be empty")
		}
	}
	switch {
	case len(c.JoinWAN) > 0 && c.Dev:
		bad("retry_join_wan", "cannot be combined with -dev, which is a cluster of one")
	case len(c.JoinWAN) > 0 && !c.Server:
		bad("retry_join_wan", "requires server mode (-server): only servers are in the WAN pool")
	}
	for i, j := range c.JoinWAN {
		if strings.TrimSpace(j) == "" {
			bad(fmt.Sprintf("retry_join_wan[%d]", i), "must not be empty")
		}
	}
	if c.RetryInterval <= 0 {
		bad("retry_interval", "must be positive, got %s", c.RetryInterval)
	}
	if c.RetryMax < 0 {
		bad("retry_max", "must not be negative, got %d", c.RetryMax)
	}
	if c.AEInterval < time.Second {
		bad("ae_interval", "must be at least 1s, got %s", c.AEInterval)
	}
	if c.CheckUpdateInterval < 0 {
		bad("check_update_interval", "must not be negative, got %s", c.CheckUpdateInterval)
	}
	if c.ReconnectTimeout < time.Minute {
		bad("reconnect_timeout", "must be at least 1m, got %s", c.ReconnectTimeout)
	}
	if c.EncryptKey != "" {
		if _, err := c.encryptKey(); err != nil {
			bad("encrypt", "%v", err)
		}
	}
	return errs
}

// encryptKey decodes EncryptKey, nil when it is empty.
func (c *Config) encryptKey() ([]byte, error) {
	if c.EncryptKey == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(c.EncryptKey)
	if err != nil {
		return nil, errors.New("is not valid base64")
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("must decode to 16, 24 or 32 bytes, got %d", len(key))
}

func (d DNSConfig) validate() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: "dns_config." + field, Reason: fmt.Sprintf(format, args...)})
	}
	if d.NodeTTL < 0 {
		bad("node_ttl", "must not be negative, got %s", d.NodeTTL)
	}
	if d.PTRTTL < 0 {
		bad("ptr_ttl", "must not be negative, got %s", d.PTRTTL)
	}
	for k, v := range d.ServiceTTL {
		name := strings.TrimSuffix(k, "*")
		if name != "" && labelProblem(name) != "" || strings.Contains(name, "*") {
			bad("service_ttl["+k+"]", "key must be a service name, a prefix ending in '*', or '*'")
		}
		if v < 0 {
			bad("service_ttl["+k+"]", "must not be negative, got %s", v)
		}
	}
	if d.MaxStale < 0 {
		bad("max_stale", "must not be negative, got %s", d.MaxStale)
	}
	if d.CacheMaxEntries < 0 {
		bad("cache_max_entries", "must not be negative, got %d", d.CacheMaxEntries)
	}
	if d.CacheIdleTimeout < 0 {
		bad("cache_idle_timeout", "must not be negative, got %s", d.CacheIdleTimeout)
	}
	if d.UDPAnswerLimit < 0 {
		bad("udp_answer_limit", "must not be negative, got %d", d.UDPAnswerLimit)
	}
	if d.ARecordLimit < 0 {
		bad("a_record_limit", "must not be negative, got %d", d.ARecordLimit)
	}
	if d.MaxUDPSize != 0 && (d.MaxUDPSize < 512 || d.MaxUDPSize > 65535) {
		bad("max_udp_size", "must be between 512 and 65535, got %d", d.MaxUDPSize)
	}
	if d.RecursorTimeout < 0 {
		bad("recursor_timeout", "must not be negative, got %s", d.RecursorTimeout)
	}
	switch d.RecursorStrategy {
	case "", "sequential", "random":
	default:
		bad("recursor_strategy", "must be sequential or random, got %q", d.RecursorStrategy)
	}
	switch d.UnhealthyAnswer {
	case "", "nodata", "nxdomain", "all":
	default:
		bad("unhealthy_answer", "must be nodata, nxdomain or all, got %q", d.UnhealthyAnswer)
	}
	return errs
}

// reservedLabels are the keywords of cairn's DNS names; a datacenter named
// like one would make names such as web.service.node.cluster ambiguous.
var reservedLabels = map[string]bool{"service": true, "node": true, "addr": true, "query": true}

// labelProblem says why s cannot be one DNS label, or "".
func labelProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > 63 {
		return "must be at most 63 characters"
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' ||
			ch == '-' && i > 0 && i < len(s)-1
		if !ok {
			return "must be a DNS label: letters, digits and inner '-' only"
		}
	}
	return ""
}

func checkDomain(d string) string {
	d = strings.TrimSuffix(d, ".")
	if d == "" {
		return "must not be empty"
	}
	for _, label := range strings.Split(d, ".") {
		if r := labelProblem(label); r != "" {
			return "has a label that " + r
		}
	}
	return ""
}

// ParseLogLevel turns a level name into a slog.Level.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q is not one of debug, info, warn, error", s)
}
