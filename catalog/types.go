package catalog

import (
	"net/netip"
	"slices"
)

// HealthStatus is the state of one check, or the aggregate of several.
type HealthStatus string

// The health states, ordered from best to worst by Worse.
const (
	HealthPassing  HealthStatus = "passing"
	HealthWarning  HealthStatus = "warning"
	HealthCritical HealthStatus = "critical"
	// HealthMaintenance is the status agents of older releases gave a
	// maintenance check (see CheckTypeMaintenance); kept so that their
	// writes, and the log holding them, still apply.
	HealthMaintenance HealthStatus = "maintenance"
)

// HealthAny is not a state: asked for in Store.ChecksInState, it matches
// checks in every state (Consul's "any").
const HealthAny HealthStatus = "any"

// severity orders states so the worst of a set can be picked. Maintenance
// ranks above critical: it takes an instance out of answers on purpose.
func (h HealthStatus) severity() int {
	switch h {
	case HealthPassing:
		return 0
	case HealthWarning:
		return 1
	case HealthCritical:
		return 2
	case HealthMaintenance:
		return 3
	}
	return 2 // an unknown state is treated as critical
}

// Worse returns the worse of two states.
func (h HealthStatus) Worse(o HealthStatus) HealthStatus {
	if o.severity() > h.severity() {
		return o
	}
	return h
}

// Valid reports whether h is one of the known states.
func (h HealthStatus) Valid() bool {
	switch h {
	case HealthPassing, HealthWarning, HealthCritical, HealthMaintenance:
		return true
	}
	return false
}

// RaftIndex records the Raft indexes at which a row was created and last
// modified.
type RaftIndex struct {
	CreateIndex uint64
	ModifyIndex uint64
}

// Node is one machine in a datacenter.
type Node struct {
	ID         string            // optional stable identifier (a UUID)
	Node       string            // node name, a DNS label, unique per datacenter
	Address    string            // IP address the node is reached at
	Datacenter string            // datacenter the node belongs to
	Meta       map[string]string // free-form metadata
	// TaggedAddresses are the node's addresses on other networks, by
	// Consul's tags ("lan", "wan", "lan_ipv4", ...). The catalog keeps
	// and gives them out; it answers DNS with Address.
	TaggedAddresses map[string]string
	RaftIndex
}

// ServiceAddress is one of a service's tagged addresses: where it is
// reached on another network (Consul's ServiceAddress).
type ServiceAddress struct {
	Address string
	Port    int
}

// Weights are the SRV weights given to an instance while its checks are
// passing or warning.
type Weights struct {
	Passing int
	Warning int
}

// DefaultWeights are the weights of a service registered without any.
var DefaultWeights = Weights{Passing: 1, Warning: 1}

// Service is one service instance registered on a node.
type Service struct {
	ID      string            // unique on its node; defaults to Service
	Service string            // service name, a DNS label
	Tags    []string          // each a DNS label
	Address string            // optional; the node's address is used when empty
	Port    int               // 0–65535
	Meta    map[string]string // free-form metadata
	Weights Weights
	// TaggedAddresses are the service's addresses on other networks, by
	// Consul's tags ("lan", "wan", "lan_ipv4", ...), kept and given out
	// as Node.TaggedAddresses are.
	TaggedAddresses map[string]ServiceAddress
	// EnableTagOverride lets the catalog's tags win over the registering
	// agent's: anti-entropy adopts tags changed in the catalog instead of
	// writing its own back (Consul's).
	EnableTagOverride bool
	// SocketPath is the unix socket the service listens on, kept and given
	// out for clients that dial it; DNS answers with Address and Port.
	SocketPath string
	// Ports are the service's named ports (Consul's multi-port services);
	// at most one is the Default. Kept and given out; SRV answers use Port.
	Ports []ServicePort
	// Locality is where the instance runs (cloud region and zone), kept
	// and given out.
	Locality *Locality
	// Kind is Consul's kind of service: "" for a typical one, or one of
	// its service mesh's ("connect-proxy", "mesh-gateway", ...). Kept and
	// given out; cairn has no service mesh and answers them as any other.
	Kind string
	// Proxy is the service mesh proxy's configuration (Consul's
	// AgentServiceConnectProxyConfig), JSON as it was registered, kept and
	// given back unread; nil when none. Never modified in place.
	Proxy []byte
	RaftIndex
}

// ServicePort is one of a service's named ports.
type ServicePort struct {
	Name    string
	Port    int
	Default bool
}

// Locality is a region and a zone within it.
type Locality struct {
	Region string
	Zone   string
}

// CheckTypeMaintenance is the Type of the check that puts a node or a
// service in maintenance mode. Such a check is critical, as Consul's;
// agents of older releases wrote it with the status HealthMaintenance.
const CheckTypeMaintenance = "maintenance"

// Check is one health check, on a node (ServiceID empty) or on a service.
type Check struct {
	Node    string
	CheckID string
	Name    string
	Status  HealthStatus
	Notes   string
	Output  string
	// Type is the kind of check, for people and tools: "http", "tcp",
	// "udp", "grpc", "ttl", "script", "alias", "gossip" (the leader's
	// check of a node's membership), "maintenance", or "" when unknown.
	// The catalog stores it and never acts on it (see ValidateCheckType).
	Type        string
	ServiceID   string
	ServiceName string
	// ServiceTags are the tags of the check's service (Consul's field of
	// that name). The store keeps them, as it keeps ServiceName, equal to
	// the service's; a writer's value is ignored. Shared with the
	// service's row: never modified in place.
	ServiceTags []string
	RaftIndex
}

// SameAs reports whether two checks are registered with the same fields,
// ignoring their Raft indexes.
func (c *Check) SameAs(o *Check) bool {
	return c.Node == o.Node && c.CheckID == o.CheckID && c.Name == o.Name && c.Status == o.Status &&
		c.Notes == o.Notes && c.Output == o.Output && c.Type == o.Type && c.ServiceID == o.ServiceID &&
		c.ServiceName == o.ServiceName && slices.Equal(c.ServiceTags, o.ServiceTags)
}

// ServiceInstance is a service together with the node it runs on and every
// check that bears on its health: the node's own checks and the service's.
// Instances returned by the store are shared snapshots and must not be
// modified.
type ServiceInstance struct {
	Node    *Node
	Service *Service
	Checks  []*Check
}

// Status is the aggregate health of the instance: the worst of its checks,
// passing when it has none.
func (si ServiceInstance) Status() HealthStatus {
	s := HealthPassing
	for _, c := range si.Checks {
		s = s.Worse(c.Status)
	}
	return s
}

// Healthy reports whether the instance should be given out: no check on it
// or its node is critical or in maintenance, and with onlyPassing none is
// warning either.
func (si ServiceInstance) Healthy(onlyPassing bool) bool {
	switch si.Status() {
	case HealthPassing:
		return true
	case HealthWarning:
		return !onlyPassing
	}
	return false
}

// Address is the address the instance is reached at: the service's own
// address, else its node's.
func (si ServiceInstance) Address() string {
	if si.Service.Address != "" {
		return si.Service.Address
	}
	return si.Node.Address
}

// HasTag reports whether the service carries tag, compared case-insensitively
// as DNS compares names.
func (s *Service) HasTag(tag string) bool {
	return slices.ContainsFunc(s.Tags, func(t string) bool { return equalFold(t, tag) })
}

// canonicalIP returns addr in its canonical text form (as netip prints it),
// so one address is stored one way and found by PTR lookups.
func canonicalIP(addr string) (string, bool) {
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" {
		return "", false
	}
	return a.String(), true
}
