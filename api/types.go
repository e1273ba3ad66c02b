package api

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

// Health check states, the values of HealthCheck.Status.
const (
	HealthPassing  = "passing"
	HealthWarning  = "warning"
	HealthCritical = "critical"
)

// HealthCheck is the state of one check. A check with an empty ServiceID
// belongs to the node as a whole.
type HealthCheck struct {
	Node        string
	CheckID     string
	Name        string
	Status      string // HealthPassing, HealthWarning or HealthCritical
	Notes       string
	Output      string
	ServiceID   string
	ServiceName string
	CreateIndex uint64
	ModifyIndex uint64
}

// ServiceEntry is one service instance with its node and every check that
// applies to it (the node's and its own), as listed by
// GET /v1/health/service/<name>.
type ServiceEntry struct {
	Node    *Node
	Service *AgentService
	Checks  []*HealthCheck
}

// QueryMeta describes the answer to a catalog or health read.
type QueryMeta struct {
	// LastIndex is the catalog index the answer reflects, read from the
	// X-Consul-Index header; 0 when the agent did not send one.
	LastIndex uint64
}

// Member states, the values of Member.Status. They name Consul's member
// status numbers 0 to 4, in order.
const (
	MemberNone    = "none"
	MemberAlive   = "alive"
	MemberLeaving = "leaving"
	MemberLeft    = "left"
	MemberFailed  = "failed"
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
	// "dc", "vsn" (protocol version) and, for a server, "port" (its RPC
	// port).
	Tags map[string]string
}
