package checks

import (
	"time"

	"github.com/cairndns/cairn/catalog"
)

// Definition is one health check as registered with the agent: what to
// probe, how often, and how results turn into a status. Exactly one of
// the kinds (HTTP, TCP, UDP, GRPC, TTL, Args, DockerContainerID with Args,
// AliasService/AliasNode) is
// set. Field names follow Consul's check definitions, so the HTTP API can
// decode them directly and errors name the field the user wrote.
type Definition struct {
	ID        string // unique on the agent; "service:<ServiceID>" by default for a service's check
	Name      string // human name; defaults from the kind and target
	Notes     string // free text, shown with the check
	ServiceID string // the service it bears on; empty for a node-level check
	// Status is the status the check starts in. Default critical: an
	// instance is not answered in DNS until its checks have passed.
	Status catalog.HealthStatus

	// HTTP is a URL fetched every Interval: 2xx passing, 429 warning,
	// anything else (or no answer within Timeout) critical. Method
	// (default GET), Header and Body shape the request; TLSSkipVerify and
	// TLSServerName the TLS handshake.
	HTTP          string
	Method        string
	Header        map[string][]string
	Body          string
	TLSSkipVerify bool
	TLSServerName string
	// TCP is a host:port connected to every Interval: success passing.
	TCP string
	// UDP is a host:port a datagram is sent to every Interval: a reply, or
	// no ICMP error within Timeout, is passing.
	UDP string
	// GRPC is host:port[/service], asked with grpc.health.v1.Health/Check;
	// SERVING is passing. GRPCUseTLS speaks TLS.
	GRPC       string
	GRPCUseTLS bool
	// TTL makes a check the application reports itself (pass, warn,
	// fail); not hearing from it for TTL turns it critical.
	TTL time.Duration
	// Args is a command run every Interval (only with script checks
	// enabled): exit 0 passing, 1 warning, anything else critical.
	Args []string
	// DockerContainerID makes Args a command run inside that container
	// every Interval, through the Docker Engine API (only with script
	// checks enabled), read as a script check's exit code. Shell is kept
	// for Consul's clients; it applies to Consul's Script field, which
	// cairn does not have.
	DockerContainerID string `json:",omitempty"`
	Shell             string `json:",omitempty"`
	// AliasService mirrors the health of another service instance (its ID)
	// on AliasNode, or on this agent's node when AliasNode is empty; with
	// only AliasNode, the health of that node.
	AliasService string
	AliasNode    string

	// Interval between runs; required for HTTP, TCP, UDP, GRPC and Args.
	Interval time.Duration
	// Timeout of one run. Default 10s, and never more than Interval.
	Timeout time.Duration

	// Thresholds: the status changes only after this many consecutive
	// results of its kind. SuccessBeforePassing successes to turn passing;
	// FailuresBeforeWarning failures to turn warning; and
	// FailuresBeforeCritical failures to turn critical. 0 means at once.
	SuccessBeforePassing   int
	FailuresBeforeWarning  int
	FailuresBeforeCritical int
	// DeregisterCriticalServiceAfter removes the check's service from the
	// agent once the check has been critical this long. 0: never.
	DeregisterCriticalServiceAfter time.Duration
	// OutputMaxSize caps the output kept from a run. Default 4096 bytes.
	OutputMaxSize int
}

// The kinds of check, as Type names them.
const (
	TypeHTTP   = "http"
	TypeTCP    = "tcp"
	TypeUDP    = "udp"
	TypeGRPC   = "grpc"
	TypeTTL    = "ttl"
	TypeScript = "script"
	TypeDocker = "docker"
	TypeAlias  = "alias"
)

// Type returns the kind of check d is, or "" when no kind is set.
func (d *Definition) Type() string {
	switch {
	case d.HTTP != "":
		return TypeHTTP
	case d.TCP != "":
		return TypeTCP
	case d.UDP != "":
		return TypeUDP
	case d.GRPC != "":
		return TypeGRPC
	case d.TTL != 0:
		return TypeTTL
	case d.DockerContainerID != "":
		return TypeDocker
	case len(d.Args) > 0:
		return TypeScript
	case d.AliasService != "" || d.AliasNode != "":
		return TypeAlias
	}
	return ""
}
