package api

import "time"

// AgentWeights are the relative weights of a service instance in DNS SRV
// answers, depending on the instance's health.
type AgentWeights struct {
	Passing int
	Warning int
}

// AgentServiceRegistration is the body of PUT /v1/agent/service/register.
// Name is required; ID defaults to Name on the agent.
type AgentServiceRegistration struct {
	ID      string `json:",omitempty"`
	Name    string
	Tags    []string          `json:",omitempty"`
	Port    int               `json:",omitempty"`
	Address string            `json:",omitempty"`
	Meta    map[string]string `json:",omitempty"`
	Weights *AgentWeights     `json:",omitempty"`
	// Check and Checks are the service's health checks; both may be
	// given. A check without a CheckID gets "service:<service-id>" when
	// it is the only one, "service:<service-id>:<n>" for the n-th of
	// several (Check first).
	Check  *AgentServiceCheck `json:",omitempty"`
	Checks AgentServiceChecks `json:",omitempty"`
}

// AgentServiceCheck is one health check, as a service registration carries
// it (Consul's AgentServiceCheck). Exactly one of HTTP, TCP, UDP, GRPC,
// TTL, Args, or AliasService/AliasNode says what kind of check it is.
// Durations are strings Go's time.ParseDuration reads, such as "10s".
type AgentServiceCheck struct {
	CheckID string `json:",omitempty"`
	Name    string `json:",omitempty"`
	Notes   string `json:",omitempty"`
	// Status is the status the check starts in: HealthPassing,
	// HealthWarning or HealthCritical (the default).
	Status string `json:",omitempty"`

	// HTTP is a URL fetched every Interval: 2xx is passing, 429 warning,
	// anything else critical. Method (default GET), Header and Body shape
	// the request; TLSSkipVerify and TLSServerName the TLS handshake.
	HTTP          string              `json:",omitempty"`
	Method        string              `json:",omitempty"`
	Header        map[string][]string `json:",omitempty"`
	Body          string              `json:",omitempty"`
	TLSSkipVerify bool                `json:",omitempty"`
	TLSServerName string              `json:",omitempty"`
	// TCP is a host:port connected to every Interval.
	TCP string `json:",omitempty"`
	// UDP is a host:port a datagram is sent to every Interval.
	UDP string `json:",omitempty"`
	// GRPC is host:port[/service], asked with grpc.health.v1; GRPCUseTLS
	// speaks TLS.
	GRPC       string `json:",omitempty"`
	GRPCUseTLS bool   `json:",omitempty"`
	// TTL makes a check the application reports itself (Agent.PassTTL and
	// the like); not hearing from it for TTL turns it critical.
	TTL string `json:",omitempty"`
	// Args is a command run every Interval (only on an agent started with
	// -enable-script-checks): exit 0 passing, 1 warning, else critical.
	Args []string `json:",omitempty"`
	// AliasService mirrors the health of another service instance (its
	// ID) on AliasNode, or on the agent's node when AliasNode is empty.
	AliasService string `json:",omitempty"`
	AliasNode    string `json:",omitempty"`

	// Interval between runs; required for HTTP, TCP, UDP, GRPC and Args.
	Interval string `json:",omitempty"`
	// Timeout of one run.
	Timeout string `json:",omitempty"`
	// Thresholds: how many consecutive results of a kind change the
	// status. 0 means at once.
	SuccessBeforePassing   int `json:",omitempty"`
	FailuresBeforeWarning  int `json:",omitempty"`
	FailuresBeforeCritical int `json:",omitempty"`
	// DeregisterCriticalServiceAfter removes the service from the agent
	// once the check has been critical this long.
	DeregisterCriticalServiceAfter string `json:",omitempty"`
	// OutputMaxSize caps the output kept from a run, in bytes.
	OutputMaxSize int `json:",omitempty"`
}

// AgentServiceChecks are the checks of a service registration.
type AgentServiceChecks []*AgentServiceCheck

// AgentCheckRegistration is the body of PUT /v1/agent/check/register: a
// check on the agent's node (ServiceID empty) or on one of its services.
// ID, Name and Notes take the place of the embedded check's CheckID, Name
// and Notes.
type AgentCheckRegistration struct {
	ID        string `json:",omitempty"`
	Name      string `json:",omitempty"`
	Notes     string `json:",omitempty"`
	ServiceID string `json:",omitempty"`
	AgentServiceCheck
}

// AgentCheck is one of the local agent's checks, as GET /v1/agent/checks
// lists it.
type AgentCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string // HealthPassing, HealthWarning, HealthCritical or HealthMaintenance
	Notes       string
	Output      string
	ServiceID   string // empty for a check of the node
	ServiceName string
	ServiceTags []string
	// Type is the kind of check: "http", "tcp", "udp", "grpc", "ttl",
	// "script", "alias", "maintenance", …
	Type string
}

// AgentService is one service registered on the local agent, as listed by
// GET /v1/agent/services and embedded in ServiceEntry.
type AgentService struct {
	ID         string
	Service    string
	Tags       []string
	Meta       map[string]string
	Port       int
	Address    string
	Weights    AgentWeights
	Datacenter string
}

// CatalogService is one service instance in the catalog, joined with its
// node, as listed by GET /v1/catalog/service/<name>.
type CatalogService struct {
	ID             string // the node's ID
	Node           string
	Address        string // the node's address
	Datacenter     string
	NodeMeta       map[string]string
	ServiceID      string
	ServiceName    string
	ServiceTags    []string
	ServiceAddress string // empty means the node's address
	ServicePort    int
	ServiceMeta    map[string]string
	ServiceWeights AgentWeights
	CreateIndex    uint64
	ModifyIndex    uint64
}

// Node is one node in the catalog.
type Node struct {
	ID          string
	Node        string
	Address     string
	Datacenter  string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// Health check states, the values of HealthCheck.Status. HealthAny is not
// a state: Health.State takes it to mean every state.
const (
	HealthPassing     = "passing"
	HealthWarning     = "warning"
	HealthCritical    = "critical"
	HealthMaintenance = "maintenance"
	HealthAny         = "any"
)

// HealthCheck is the state of one check. A check with an empty ServiceID
// belongs to the node as a whole.
type HealthCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string // HealthPassing, HealthWarning or HealthCritical (see EffectiveStatus)
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	// ServiceTags are the tags of the check's service, empty for the
	// node's checks.
	ServiceTags []string
	// Type is the kind of check: "http", "tcp", "ttl", "gossip" (the
	// servers' view of the node), "maintenance", …; empty when unknown.
	Type        string
	CreateIndex uint64
	ModifyIndex uint64
}

// HealthChecks are several checks, such as those of one instance.
type HealthChecks []*HealthCheck

// EffectiveStatus is the check's status, HealthMaintenance for a
// maintenance-mode check: the agent reports those critical, as Consul's
// does, with Type "maintenance" (agents of older releases: with the
// status "maintenance").
func (c *HealthCheck) EffectiveStatus() string {
	if c.Type == "maintenance" {
		return HealthMaintenance
	}
	return c.Status
}

// AggregatedStatus is the worst EffectiveStatus of the checks:
// HealthMaintenance above HealthCritical above HealthWarning above
// HealthPassing. No checks is passing; a status the client does not know
// counts as critical.
func (cs HealthChecks) AggregatedStatus() string {
	worst := 0
	for _, c := range cs {
		if c != nil {
			worst = max(worst, severity(c.EffectiveStatus()))
		}
	}
	return byseverity[worst]
}

// byseverity names the ranks severity gives.
var byseverity = [...]string{HealthPassing, HealthWarning, HealthCritical, HealthMaintenance}

func severity(status string) int {
	switch status {
	case HealthPassing:
		return 0
	case HealthWarning:
		return 1
	case HealthMaintenance:
		return 3
	}
	return 2
}

// ServiceEntry is one service instance with its node and every check that
// applies to it (the node's and its own), as listed by
// GET /v1/health/service/<name>.
type ServiceEntry struct {
	Node    *Node
	Service *AgentService
	Checks  HealthChecks
}

// QueryMeta describes the answer to a catalog or health read.
type QueryMeta struct {
	// LastIndex is the catalog index the answer reflects, read from the
	// X-Consul-Index header; 0 when the agent did not send one. Pass it
	// as QueryOptions.WaitIndex to wait for the next change. When it is
	// lower than the WaitIndex sent (the agent's server restored an older
	// snapshot, or is behind the one that answered before), start over
	// from it: indexes only compare within one history.
	LastIndex uint64
	// KnownLeader reports whether the answering server knew a leader
	// (X-Consul-KnownLeader).
	KnownLeader bool
	// LastContact is how long ago the answering server last heard from
	// the leader (X-Consul-LastContact); 0 on the leader.
	LastContact time.Duration
}

// Member states, the values of Member.Status. They name Consul's member
// status numbers 0 to 4, in order, and cairn's 5: an agent refused for
// speaking a protocol this one does not (Tags["incompatible"] says why).
const (
	MemberNone         = "none"
	MemberAlive        = "alive"
	MemberLeaving      = "leaving"
	MemberLeft         = "left"
	MemberFailed       = "failed"
	MemberIncompatible = "incompatible"
)

// Member roles, the values of Member.Role.
const (
	RoleServer = "server"
	RoleClient = "client"
)

// Member is one agent of the LAN gossip pool, as GET /v1/agent/members
// lists it (Consul's AgentMember, read for people: Status and Role are
// names, and Datacenter is taken out of Tags).
type Member struct {
	Name       string
	Addr       string // gossip IP
	Port       uint16 // gossip port
	Status     string // MemberAlive, MemberLeaving, MemberLeft, MemberFailed; MemberNone or "unknown" otherwise
	Role       string // RoleServer when Tags["role"] is "consul", RoleClient otherwise
	Datacenter string // Tags["dc"]
	// Tags are the member's gossip tags as the agent sent them: "role",
	// "dc", "vsn" (protocol version), "vsn_min" and "vsn_max" (the range
	// it accepts), "build" ("<version>:<revision>"), "id" and, for a
	// server, "port" (its RPC port).
	Tags map[string]string
	// ClockSkew is how far a server's wall clock is ahead of the agent's
	// (negative: behind), as the agent last measured it from its RPC
	// replies; nil when it has not (clients, servers it has not called).
	ClockSkew *Duration `json:",omitempty"`
}

// CatalogNode is a node with its services keyed by ID, as GET
// /v1/catalog/node/<node> gives it.
type CatalogNode struct {
	Node     *Node
	Services map[string]*AgentService
}

// CatalogRegistration is the body of PUT /v1/catalog/register: a node and
// optionally one service and checks on it. Node and Address are required.
type CatalogRegistration struct {
	ID         string            `json:",omitempty"`
	Node       string            // required
	Address    string            // required unless SkipNodeUpdate
	NodeMeta   map[string]string `json:",omitempty"`
	Datacenter string            `json:",omitempty"`
	Service    *AgentService     `json:",omitempty"`
	Check      *AgentCheck       `json:",omitempty"`
	Checks     HealthChecks      `json:",omitempty"`
	// SkipNodeUpdate leaves an existing node as it is and only adds the
	// service and checks.
	SkipNodeUpdate bool `json:",omitempty"`
}

// CatalogDeregistration is the body of PUT /v1/catalog/deregister: the
// node alone removes it with everything on it; ServiceID or CheckID
// removes only that.
type CatalogDeregistration struct {
	Node       string
	Datacenter string `json:",omitempty"`
	ServiceID  string `json:",omitempty"`
	CheckID    string `json:",omitempty"`
}

// AgentSelf is what GET /v1/agent/self says of the agent.
type AgentSelf struct {
	Config AgentSelfConfig
	// Member is the agent as its LAN pool sees it, with Consul's member
	// tags (role, dc, ...).
	Member struct {
		Name   string
		Addr   string
		Port   uint16
		Tags   map[string]string
		Status int
	}
}

// AgentSelfConfig is the agent's configuration as AgentSelf reports it.
type AgentSelfConfig struct {
	Datacenter string
	NodeName   string
	NodeID     string
	Server     bool
	Version    string
}
