package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/cairndns/cairn/telemetry"

	"github.com/cairndns/cairn/cache"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/internal/logfile"
	"github.com/cairndns/cairn/resolver"
	"github.com/cairndns/cairn/tlsutil"
	"github.com/cairndns/cairn/zones"
)

// Config is everything one agent needs. Default gives a usable value;
// LoadFile and the CLI's flags change it; Validate checks it whole.
type Config struct {
	// NodeName names this node in the catalog and in DNS
	// (<node>.node.<dc>.<domain>). Default: the host name, cut at the first dot.
	NodeName string
	// NodeID is this node's unique identifier, a UUID, as Consul's
	// node_id: the catalog node's ID and the "id" tag of its gossip
	// member. Default "": the agent generates one and keeps it in
	// <data_dir>/node-id (random per run without a data dir).
	NodeID string
	// Datacenter this agent belongs to. Default: zones.DefaultConfig's
	// ("dc1").
	Datacenter string
	// Services are the services of the config file (service and services
	// blocks), registered at start and on reload. Default none.
	Services []ServiceDefinition
	// NodeMeta is free-form metadata of this node, answered in DNS as TXT
	// records "key=value" of <node>.node names. Default none.
	NodeMeta map[string]string
	// Domain is the DNS zone cairn answers for. Default:
	// zones.DefaultConfig's ("cluster.").
	Domain string
	// BindAddr is the address cluster traffic (server RPC, gossip) binds
	// to. Default 127.0.0.1: nothing listens beyond loopback unless
	// configured.
	BindAddr string
	// AdvertiseAddr is the address other nodes and DNS answers use for this
	// node. Default: BindAddr, or when that is unspecified (0.0.0.0) the
	// first private IPv4 address of the machine.
	AdvertiseAddr string
	// AdvertiseAddrWAN is the address servers of other datacenters use for
	// this server (WAN gossip and RPC), and the node's "wan" tagged
	// address. Default: AdvertiseAddr.
	AdvertiseAddrWAN string
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
	// LogFile is where the agent logs besides stderr, and how that file
	// rotates (log_file, log_rotate_bytes, log_rotate_duration,
	// log_rotate_max_files; logging.go). Default logfile.DefaultConfig():
	// no file.
	LogFile logfile.Config
	// LogJSON writes log lines as JSON objects, one a line, on stderr and
	// in the log file (log_json). Default false: text (key=value).
	LogJSON bool
	// AltDomain is a second zone answered like Domain (for a migration, or
	// a name users know from elsewhere). Default none.
	AltDomain string

	// Zones configures the answers of the zones (dns_config: node_ttl,
	// ptr_ttl, service_ttl, soa, node_meta_txt,
	// enable_additional_node_meta_txt). The agent sets its Domain,
	// Datacenter and NSAddress from Domain, AltDomain, Datacenter and the
	// advertise address. Default zones.DefaultConfig().
	Zones zones.Config
	// Resolver configures the DNS server (dns_config: udp_answer_limit,
	// a_record_limit, max_udp_size, udp_sockets, enable_truncate, recursor_timeout,
	// recursor_strategy, unhealthy_answer; and recursors). The agent sets
	// its Addr from ClientAddr and Ports.DNS. Default
	// resolver.DefaultConfig().
	Resolver resolver.Config
	// Cache configures the agent's DNS cache (dns_config:
	// cache_max_entries, cache_idle_timeout, max_stale). The agent sets
	// its Hub and RefreshAfter. Default cache.DefaultConfig().
	Cache cache.Config
	// DNSSEC is where the DNSSEC key comes from (dns_config.dnssec:
	// key_file, auto; enabled and signature_validity are
	// Resolver.DNSSEC's).
	DNSSEC DNSSEC
	// OnlyPassing leaves instances with a warning check out of DNS
	// answers (dns_config.only_passing). Default false: warning counts as
	// healthy.
	OnlyPassing bool

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
	// EnableDebug serves Go's runtime profiles under /debug/pprof/ on the
	// HTTP API (operator:read with ACLs), as Consul's enable_debug.
	// Default off: they show the process's internals and cost CPU.
	EnableDebug bool
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

	// ACL configures tokens and policies (the acl block). Default
	// DefaultACL(): off.
	ACL ACL
	// TLS configures TLS of the server port, the HTTPS API and DNS over
	// TLS (the tls block). Default off.
	TLS TLS
	// Limits are the caps of the limits block. Default DefaultLimits().
	Limits Limits
	// Telemetry configures the metrics of /v1/agent/metrics (the
	// telemetry block). Default telemetry.DefaultConfig().
	Telemetry telemetry.Config
	// HTTP is the http_config block.
	HTTP HTTPConfig

	// Performance is the performance block (server.go). Default
	// DefaultPerformance().
	Performance Performance
	// Autopilot is the autopilot block (server.go), for servers. Default
	// DefaultAutopilot().
	Autopilot Autopilot
	// RaftLogStore is the raft_logstore block (server.go), for servers.
	RaftLogStore RaftLogStore
	// ServerServiceName is the name of the service the leader keeps on
	// every server's node, on its RPC port (server_service_name, server.go):
	// "consul" for tools that look Consul's servers up by their service.
	// Give every server the same. Default "cairn".
	ServerServiceName string
	// RaftSnapshotThreshold, RaftSnapshotInterval and RaftTrailingLogs
	// say when a server snapshots and compacts its Raft log (server.go).
	// Defaults 8192, 120s and 10240, consensus.DefaultConfig()'s.
	RaftSnapshotThreshold int
	RaftSnapshotInterval  time.Duration
	RaftTrailingLogs      int
	// Coordinates are the network coordinate keys (coordinates.go).
	// Default DefaultCoordinates().
	Coordinates Coordinates
	// Addresses and UnixSockets are the addresses and unix_sockets
	// blocks (addresses.go).
	Addresses   Addresses
	UnixSockets UnixSockets
	// GossipLAN is the gossip_lan block (gossip.go): the timers of the
	// LAN pool, every agent's. Default DefaultGossipLAN(), memberlist's
	// LAN preset. A change applies on restart.
	GossipLAN GossipTiming
	// GossipWAN is the gossip_wan block (gossip.go): the timers of the
	// WAN pool, servers only. Default DefaultGossipWAN(), memberlist's
	// WAN preset. A change applies on restart.
	GossipWAN GossipTiming
	// LeaveOnTerminate (leave_on_terminate) and SkipLeaveOnInterrupt
	// (skip_leave_on_interrupt) say whether the agent leaves the cluster
	// gracefully when a SIGTERM or a SIGINT stops it. Nil (the default)
	// decides by role, as Consul: a client leaves, a server does not, so
	// that restarting servers does not change the Raft configuration.
	// Read them through LeavesOnTerminate and LeavesOnInterrupt.
	LeaveOnTerminate     *bool
	SkipLeaveOnInterrupt *bool
}

// Ports are the TCP/UDP ports the agent listens on.
type Ports struct {
	DNS int // UDP and TCP, default 8600
	// HTTP is the port of the plain HTTP API, default 8500; -1 serves
	// none (Consul's), so that an agent may serve its API over HTTPS
	// only. Both HTTP and HTTPS off is allowed, as in Consul: the agent
	// then answers DNS and takes signals, and no CLI command reaches it.
	HTTP int
	// Server is the server RPC port, default 8300: a server carries Raft
	// and RPC on it, at AdvertiseAddr:Server. Clients open none.
	Server int
	// SerfLAN is the LAN gossip port (UDP and TCP) of every agent,
	// default 8301.
	SerfLAN int
	// SerfWAN is the WAN gossip port (UDP and TCP) of a server, default
	// 8302. Clients open none.
	SerfWAN int
	// HTTPS is the port of the HTTPS API, served with tls.https; -1 (the
	// default) serves none. Consul's is 8501 when set. DNS over HTTPS
	// (RFC 8484) is served on it at /dns-query.
	HTTPS int
	// DNSTLS is the port of DNS over TLS (RFC 7858), on ClientAddr like
	// DNS, served with tls.dns; -1 (the default) serves none. The
	// standard port is 853.
	DNSTLS int
}

// Default returns the configuration of an agent started with no flags.
// The nested component configurations are their packages' defaults.
func Default() Config {
	zc := zones.DefaultConfig()
	return Config{
		NodeName:            defaultNodeName(),
		Datacenter:          zc.Datacenter,
		Domain:              zc.Domain,
		BindAddr:            "127.0.0.1",
		ClientAddr:          "127.0.0.1",
		Ports:               Ports{DNS: 8600, HTTP: 8500, Server: 8300, SerfLAN: 8301, SerfWAN: 8302, HTTPS: -1, DNSTLS: -1},
		LogLevel:            "info",
		LogFile:             logfile.DefaultConfig(),
		Zones:               zc,
		Resolver:            resolver.DefaultConfig(),
		Cache:               cache.DefaultConfig(),
		RetryInterval:       30 * time.Second,
		ReconnectTimeout:    72 * time.Hour,
		CheckUpdateInterval: 5 * time.Minute,
		AEInterval:          time.Minute,
		ACL:                 DefaultACL(),
		TLS:                 TLS{RPC: tlsutil.DefaultConfig(), HTTPS: tlsutil.DefaultConfig(), DNS: tlsutil.DefaultConfig()},
		Limits:              DefaultLimits(),
		Telemetry:           telemetry.DefaultConfig(),
		HTTP:                HTTPConfig{ReadTimeout: 10 * time.Second},
		Performance:         DefaultPerformance(),
		Autopilot:           DefaultAutopilot(),
		RaftLogStore:        RaftLogStore{WALSegmentSizeMB: 64},
		ServerServiceName:   catalog.ServerServiceID,
		Coordinates:         DefaultCoordinates(),
		GossipLAN:           DefaultGossipLAN(),
		GossipWAN:           DefaultGossipWAN(),

		// consensus.DefaultConfig()'s (this package does not import it;
		// agent's TestRaftSnapshotDefaults keeps them equal).
		RaftSnapshotThreshold: 8192,
		RaftSnapshotInterval:  120 * time.Second,
		RaftTrailingLogs:      10240,
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

// GossipKey decodes EncryptKey: nil when it is empty.
func (c *Config) GossipKey() ([]byte, error) {
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
