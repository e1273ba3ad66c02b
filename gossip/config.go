package gossip

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	metrics "github.com/hashicorp/go-metrics"
	"github.com/hashicorp/memberlist"

	"github.com/cairndns/cairn/internal/buildinfo"
)

// Kind says which pool a Pool is.
type Kind int

const (
	// LAN is the pool of every agent of one datacenter. Member names are
	// node names.
	LAN Kind = iota
	// WAN is the pool of the servers of every datacenter. Member names are
	// "<node>.<dc>".
	WAN
)

func (k Kind) String() string {
	switch k {
	case LAN:
		return "lan"
	case WAN:
		return "wan"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Role is what an agent is in its datacenter.
type Role string

const (
	// RoleServer is an agent running Raft; it serves RPC at its RPCAddr.
	RoleServer Role = "server"
	// RoleClient is an agent that sends every catalog call to a server.
	RoleClient Role = "client"
)

func (r Role) valid() bool { return r == RoleServer || r == RoleClient }

// The cairn protocol versions this build speaks (buildinfo's, where the
// contract is written down). A peer whose range does not overlap a pool's
// [Config.ProtocolMin, Config.ProtocolMax] is refused.
const (
	ProtocolVersionMin = buildinfo.ProtocolMin
	ProtocolVersionMax = buildinfo.ProtocolMax
)

// Default gossip ports, as Consul users know them.
const (
	DefaultLANPort = 8301
	DefaultWANPort = 8302
)

// Timing holds memberlist's protocol timers. DefaultLANConfig and
// DefaultWANConfig fill it from memberlist's LAN and WAN presets; tests
// shorten it (gossiptest.FastTiming).
type Timing struct {
	// ProbeInterval is how often one random member is probed; ProbeTimeout
	// how long a direct probe waits for an ack before indirect probes.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// SuspicionMult scales how long a suspect member has to refute before it
	// is declared failed (SuspicionMult × log(N+1) × ProbeInterval), and
	// SuspicionMaxTimeoutMult caps how far that may start above the minimum.
	SuspicionMult           int
	SuspicionMaxTimeoutMult int
	// GossipInterval is how often queued broadcasts go to GossipNodes
	// random members.
	GossipInterval time.Duration
	GossipNodes    int
	// GossipToTheDead is how long failed and left members keep receiving
	// gossip; memberlist forgets them after it.
	GossipToTheDead time.Duration
	// PushPullInterval is how often the full state is synced with one
	// random member (0 disables periodic syncs).
	PushPullInterval time.Duration
	// RetransmitMult: each broadcast is sent RetransmitMult × log(N+1) times.
	RetransmitMult int
	// IndirectChecks is how many members are asked to probe a member that
	// missed a direct probe.
	IndirectChecks int
	// TCPTimeout bounds one TCP exchange: a push/pull sync, a join attempt
	// to one address, a fallback TCP probe.
	TCPTimeout time.Duration
	// ReconnectInterval is how often the pool may try to join a failed
	// member again, so that a partition heals within seconds instead of at
	// a lucky push/pull (reconnect.go). 0 disables it. memberlist has no
	// such timer: the pool runs it, and timingFrom cannot fill it.
	ReconnectInterval time.Duration
}

// The presets' ReconnectIntervals. Serf uses 30s, but then a healed
// partition still waits about as long as for a push/pull; the probability
// rule in reconnect.go keeps the whole pool to about one attempt per
// failed member per interval, so a short interval costs little.
const (
	lanReconnectInterval = 2 * time.Second
	wanReconnectInterval = 10 * time.Second
)

func timingFrom(c *memberlist.Config) Timing {
	return Timing{
		ProbeInterval:           c.ProbeInterval,
		ProbeTimeout:            c.ProbeTimeout,
		SuspicionMult:           c.SuspicionMult,
		SuspicionMaxTimeoutMult: c.SuspicionMaxTimeoutMult,
		GossipInterval:          c.GossipInterval,
		GossipNodes:             c.GossipNodes,
		GossipToTheDead:         c.GossipToTheDeadTime,
		PushPullInterval:        c.PushPullInterval,
		RetransmitMult:          c.RetransmitMult,
		IndirectChecks:          c.IndirectChecks,
		TCPTimeout:              c.TCPTimeout,
	}
}

func (t Timing) apply(c *memberlist.Config) {
	c.ProbeInterval = t.ProbeInterval
	c.ProbeTimeout = t.ProbeTimeout
	c.SuspicionMult = t.SuspicionMult
	c.SuspicionMaxTimeoutMult = t.SuspicionMaxTimeoutMult
	c.GossipInterval = t.GossipInterval
	c.GossipNodes = t.GossipNodes
	c.GossipToTheDeadTime = t.GossipToTheDead
	c.PushPullInterval = t.PushPullInterval
	c.RetransmitMult = t.RetransmitMult
	c.IndirectChecks = t.IndirectChecks
	c.TCPTimeout = t.TCPTimeout
}

// Config configures one pool.
type Config struct {
	// NodeName is the agent's node name, a DNS label. Required.
	NodeName string
	// Datacenter is the agent's datacenter, a DNS label. Required.
	Datacenter string
	// Role is RoleServer or RoleClient. Default RoleClient; the WAN pool
	// takes servers only.
	Role Role
	// Pool is LAN or WAN. It sets the member name: the node name on the LAN,
	// "<node>.<dc>" on the WAN.
	Pool Kind
	// BindAddr and BindPort are where gossip listens (UDP and TCP). Defaults:
	// "0.0.0.0" and DefaultLANPort or DefaultWANPort. Port 0 picks a free
	// port, read it back from LocalMember.
	BindAddr string
	BindPort int
	// AdvertiseAddr and AdvertisePort are what other members reach this one
	// at. Defaults: the bind address (a private address of this host when
	// binding to all interfaces) and the bound port. With BindPort 0 the
	// advertised port is always the one picked.
	AdvertiseAddr string
	AdvertisePort int
	// RPCAddr is the host:port other agents send RPCs to. Required for
	// servers; must be empty for clients.
	RPCAddr string
	// WANPort is, in a server's LAN pool, the port of its WAN pool, so
	// that the other servers of its datacenter can join it there. 0: none.
	WANPort int
	// NodeID is the agent's node ID (a UUID), gossiped in metadata; on the
	// LAN a peer with this ID under another name is refused, as Consul
	// refuses it. Default "": none.
	NodeID string
	// Build is the agent's version, "<version>:<revision>", gossiped in
	// metadata (Consul's "build" tag). Default "": none.
	Build string
	// ProtocolVersion is the cairn protocol version gossiped in metadata
	// (Consul's "vsn" tag), and ProtocolMin and ProtocolMax the range the
	// pool accepts and gossips ("vsn_min", "vsn_max"). Defaults
	// buildinfo's Protocol, ProtocolMin and ProtocolMax. They are no user
	// knob: a test sets them to play a build of another protocol.
	ProtocolVersion, ProtocolMin, ProtocolMax uint8
	// EncryptKey, when set, is the AES key (16, 24 or 32 bytes) gossip is
	// encrypted and authenticated with. Members with another key, or none,
	// cannot join. Default none. A keyring file, when there is one, wins
	// over it.
	EncryptKey []byte
	// KeyringFile, when set, is where the pool keeps its keyring (a JSON
	// list of base64 keys, primary first): loaded at start if it exists
	// (then EncryptKey is ignored), else written with EncryptKey, and
	// rewritten after every keyring change. Default "": the keyring lives
	// in memory only, and a restart starts again from EncryptKey.
	KeyringFile string
	// RetainDead is how long a Failed or Left member stays in Members after
	// it failed or left (unless it comes back). Default (and 0):
	// Timing.GossipToTheDead, when memberlist itself forgets it. A leader that acts on "failed for
	// longer than D" needs RetainDead ≥ D.
	RetainDead time.Duration
	// Timing holds memberlist's timers.
	Timing Timing
	// DisableCoordinates stops the pool from computing this member's
	// network coordinate from its probes' round trips (coordinates.go),
	// as Consul's disable_coordinates: its acks then carry no
	// coordinate, and Coordinate reports none. Default false.
	DisableCoordinates bool
	// OnUserEvent, when set, receives each user event gossiped in the pool
	// (UserEvent) once, its payload its own to keep. It runs on
	// memberlist's receive loop: it must not block. Default nil: user
	// events are passed on but not delivered.
	OnUserEvent func(payload []byte)
}

// DefaultLANConfig returns a LAN pool config with memberlist's LAN timings
// (probe every 1s, 500ms probe timeout, gossip every 200ms, push/pull every
// 30s, failed members kept 30s) and a failed member retried every 2s, on
// 0.0.0.0:8301. NodeName and Datacenter must still be set.
func DefaultLANConfig() Config {
	ml := memberlist.DefaultLANConfig()
	timing := timingFrom(ml)
	timing.ReconnectInterval = lanReconnectInterval
	return Config{
		Role:            RoleClient,
		Pool:            LAN,
		BindAddr:        "0.0.0.0",
		BindPort:        DefaultLANPort,
		ProtocolVersion: buildinfo.Protocol,
		ProtocolMin:     buildinfo.ProtocolMin,
		ProtocolMax:     buildinfo.ProtocolMax,
		RetainDead:      ml.GossipToTheDeadTime,
		Timing:          timing,
	}
}

// DefaultWANConfig returns a WAN pool config with memberlist's WAN timings
// (probe every 5s, 3s probe timeout, gossip every 500ms, push/pull every
// 60s, failed members kept 60s) and a failed member retried every 10s, on
// 0.0.0.0:8302, for a server. NodeName, Datacenter and RPCAddr must still
// be set.
func DefaultWANConfig() Config {
	ml := memberlist.DefaultWANConfig()
	timing := timingFrom(ml)
	timing.ReconnectInterval = wanReconnectInterval
	return Config{
		Role:            RoleServer,
		Pool:            WAN,
		BindAddr:        "0.0.0.0",
		BindPort:        DefaultWANPort,
		ProtocolVersion: buildinfo.Protocol,
		ProtocolMin:     buildinfo.ProtocolMin,
		ProtocolMax:     buildinfo.ProtocolMax,
		RetainDead:      ml.GossipToTheDeadTime,
		Timing:          timing,
	}
}

// MemberName is the name the pool gossips for this node: NodeName on the
// LAN, "<node>.<dc>" on the WAN.
func (c Config) MemberName() string {
	if c.Pool == WAN {
		return c.NodeName + "." + c.Datacenter
	}
	return c.NodeName
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("gossip %s: "+format, append([]any{field}, args...)...))
	}
	if why := validLabel(c.NodeName); why != "" {
		bad("NodeName", "%s", why)
	}
	if why := validLabel(c.Datacenter); why != "" {
		bad("Datacenter", "%s", why)
	}
	if c.Pool != LAN && c.Pool != WAN {
		bad("Pool", "must be LAN or WAN, got %d", int(c.Pool))
	}
	switch {
	case !c.Role.valid():
		bad("Role", "must be %q or %q, got %q", RoleServer, RoleClient, c.Role)
	case c.Pool == WAN && c.Role != RoleServer:
		bad("Role", "the WAN pool holds servers only, got %q", c.Role)
	case c.Role == RoleServer && c.RPCAddr == "":
		bad("RPCAddr", "is required for a server")
	case c.Role == RoleClient && c.RPCAddr != "":
		bad("RPCAddr", "must be empty for a client, got %q", c.RPCAddr)
	}
	if c.RPCAddr != "" {
		if why := validHostPort(c.RPCAddr); why != "" {
			bad("RPCAddr", "%s", why)
		} else if host, _, _ := net.SplitHostPort(c.RPCAddr); net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			bad("RPCAddr", "must be an address other agents can reach, got %q", c.RPCAddr)
		}
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		bad("BindAddr", "must be an IP address, got %q", c.BindAddr)
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		bad("AdvertiseAddr", "must be an IP address, got %q", c.AdvertiseAddr)
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		bad("BindPort", "must be 0–65535, got %d", c.BindPort)
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		bad("AdvertisePort", "must be 0–65535, got %d", c.AdvertisePort)
	}
	if c.ProtocolMin == 0 || c.ProtocolMin > c.ProtocolMax {
		bad("ProtocolMin", "must be 1–ProtocolMax (%d), got %d", c.ProtocolMax, c.ProtocolMin)
	}
	if c.ProtocolVersion < c.ProtocolMin || c.ProtocolVersion > c.ProtocolMax {
		bad("ProtocolVersion", "must be %d–%d, got %d", c.ProtocolMin, c.ProtocolMax, c.ProtocolVersion)
	}
	switch len(c.EncryptKey) {
	case 0, 16, 24, 32:
	default:
		bad("EncryptKey", "must be 16, 24 or 32 bytes (AES-128/192/256), got %d", len(c.EncryptKey))
	}
	if c.RetainDead < 0 {
		bad("RetainDead", "must not be negative, got %s", c.RetainDead)
	}
	errs = append(errs, c.Timing.validate()...)
	if len(errs) == 0 {
		// Only now is the metadata's size meaningful to check, with
		// as many key fingerprints as a keyring can hold.
		m := c.meta()
		m.Keys = fingerprints(make([]byte, MaxKeys*fingerprintLen))
		if _, err := encodeMeta(m); err != nil {
			bad("RPCAddr", "%v", err)
		}
	}
	return errors.Join(errs...)
}

func (t Timing) validate() []error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"ProbeInterval", t.ProbeInterval}, {"ProbeTimeout", t.ProbeTimeout},
		{"GossipInterval", t.GossipInterval}, {"GossipToTheDead", t.GossipToTheDead},
		{"TCPTimeout", t.TCPTimeout},
	} {
		if d.v < time.Millisecond {
			errs = append(errs, fmt.Errorf("gossip Timing.%s: must be at least 1ms, got %s", d.name, d.v))
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"PushPullInterval", t.PushPullInterval}, {"ReconnectInterval", t.ReconnectInterval},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("gossip Timing.%s: must not be negative, got %s", d.name, d.v))
		}
	}
	if t.ProbeTimeout > t.ProbeInterval {
		errs = append(errs, fmt.Errorf("gossip Timing.ProbeTimeout: must not exceed ProbeInterval (%s > %s)", t.ProbeTimeout, t.ProbeInterval))
	}
	for _, n := range []struct {
		name string
		v    int
	}{
		{"SuspicionMult", t.SuspicionMult}, {"SuspicionMaxTimeoutMult", t.SuspicionMaxTimeoutMult},
		{"GossipNodes", t.GossipNodes}, {"RetransmitMult", t.RetransmitMult},
		{"IndirectChecks", t.IndirectChecks},
	} {
		if n.v < 1 {
			errs = append(errs, fmt.Errorf("gossip Timing.%s: must be at least 1, got %d", n.name, n.v))
		}
	}
	return errs
}

// meta is the metadata this config gossips.
func (c Config) meta() meta {
	return meta{
		Role: c.Role, Datacenter: c.Datacenter, RPCAddr: c.RPCAddr, ProtocolVersion: c.ProtocolVersion, WANPort: uint16(c.WANPort),
		NodeID: c.NodeID, Build: c.Build, ProtocolMin: c.ProtocolMin, ProtocolMax: c.ProtocolMax,
		Features: features,
	}
}

// memberlistConfig builds memberlist's config; the delegates and the
// keyring are set by New.
func (c Config) memberlistConfig() *memberlist.Config {
	ml := memberlist.DefaultLANConfig()
	if c.Pool == WAN {
		ml = memberlist.DefaultWANConfig()
	}
	c.Timing.apply(ml)
	ml.Name = c.MemberName()
	ml.BindAddr = c.BindAddr
	if ml.BindAddr == "" {
		ml.BindAddr = "0.0.0.0"
	}
	ml.BindPort = c.BindPort
	// A server runs both pools in one process, and memberlist's series
	// (go-metrics is process-wide) would add up across them without it.
	ml.MetricLabels = []metrics.Label{{Name: "pool", Value: c.Pool.String()}}
	ml.AdvertiseAddr = c.AdvertiseAddr
	ml.AdvertisePort = c.AdvertisePort
	if ml.AdvertisePort == 0 {
		ml.AdvertisePort = c.BindPort
	}
	return ml
}

// validLabel reports why s cannot be one DNS label, or "" when it can: node
// and datacenter names appear in DNS names (<node>.node.<dc>.cluster).
func validLabel(s string) string {
	if s == "" {
		return "is required"
	}
	if len(s) > 63 {
		return fmt.Sprintf("must be at most 63 characters to be a DNS label, got %d", len(s))
	}
	if s[0] == '-' || s[len(s)-1] == '-' {
		return "must not start or end with '-' to be a DNS label"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Sprintf("character %q is not allowed in a DNS label (letters, digits and '-' only)", c)
		}
	}
	return ""
}

// validHostPort reports why s is not a host:port with a port 1–65535, or "".
func validHostPort(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("must be host:port, got %q", s)
	}
	if host == "" {
		return fmt.Sprintf("needs a host, got %q", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Sprintf("port must be 1–65535, got %q", port)
	}
	return ""
}
