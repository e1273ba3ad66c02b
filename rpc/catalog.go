package rpc

import "github.com/cairndns/cairn/catalog"

// This file holds the wire types of the Catalog endpoint, which package
// consensus serves. They live here, beside the envelopes, so clients (the
// agent's local state, the cache) can call the endpoint without importing
// consensus.

// CatalogEndpoint is the name the Catalog endpoint is registered under on
// the Server; its methods are called as "Catalog.<Method>".
const CatalogEndpoint = "Catalog"

// The methods of the Catalog endpoint, as Pool.Call names them.
const (
	MethodCatalogRegister         = CatalogEndpoint + ".Register"
	MethodCatalogDeregister       = CatalogEndpoint + ".Deregister"
	MethodCatalogServiceInstances = CatalogEndpoint + ".ServiceInstances"
	MethodCatalogNodes            = CatalogEndpoint + ".Nodes"
	MethodCatalogServices         = CatalogEndpoint + ".Services"
	MethodCatalogNodeServices     = CatalogEndpoint + ".NodeServices"
	MethodCatalogReverse          = CatalogEndpoint + ".Reverse"
	MethodCatalogNodeChecks       = CatalogEndpoint + ".NodeChecks"
	MethodCatalogServiceChecks    = CatalogEndpoint + ".ServiceChecks"
	MethodCatalogChecksInState    = CatalogEndpoint + ".ChecksInState"
	MethodCatalogFeed             = CatalogEndpoint + ".Feed" // a stream method (Pool.Stream)
	MethodCatalogListDatacenters  = CatalogEndpoint + ".ListDatacenters"
)

// The request and reply types of the Catalog endpoint. They travel as
// msgpack maps keyed by field name: the embedded envelopes (QueryOptions,
// QueryMeta, WriteRequest) are flattened into them, and fields are
// only ever added.
//
// Forwarded is set by a server that passes a request on to the leader, and
// by no one else: the server receiving it answers it or fails, and never
// forwards it again, so a request makes at most one hop even while
// leadership moves.

// RegisterRequest registers a node and, optionally, a service and checks on
// it. The routing datacenter is WriteRequest's; Registration.Datacenter,
// the node's datacenter, may be left empty and is then the server's.
type RegisterRequest struct {
	WriteRequest
	Registration catalog.RegisterRequest
	Forwarded    bool
}

func (*RegisterRequest) isIdempotent() {}

// DeregisterRequest removes a service, a check or a whole node.
type DeregisterRequest struct {
	WriteRequest
	Deregistration catalog.DeregisterRequest
	Forwarded      bool
}

func (*DeregisterRequest) isIdempotent() {}

// ServiceInstancesRequest asks for the instances of one service, with their
// nodes and checks.
type ServiceInstancesRequest struct {
	QueryOptions
	Service string // required, matched case-insensitively
	Tag     string // optional: only instances carrying this tag
	// OnlyHealthy drops instances with a critical or maintenance check;
	// OnlyPassing (which implies it) drops those with a warning too.
	OnlyHealthy bool
	OnlyPassing bool
	Forwarded   bool
	// Near, when set, is a node name: the instances come sorted by the
	// estimated round trip time from it, nearest first, those whose node
	// has no coordinate last (?near). "" keeps the catalog's order.
	Near string
}

// ServiceInstancesResponse holds the instances sorted by node, then
// service ID.
type ServiceInstancesResponse struct {
	QueryMeta
	Instances []catalog.ServiceInstance
}

// NodesRequest asks for every node of the datacenter.
type NodesRequest struct {
	QueryOptions
	Forwarded bool
	// Near, when set, sorts the nodes by the estimated round trip time
	// from that node, as ServiceInstancesRequest.Near.
	Near string
}

// NodesResponse holds the nodes sorted by name.
type NodesResponse struct {
	QueryMeta
	Nodes []*catalog.Node
}

// ServicesRequest asks for every service name with its tags.
type ServicesRequest struct {
	QueryOptions
	Forwarded bool
	// Instances asks for every instance instead of the names and tags,
	// for the HTTP API to evaluate a ?filter on (Consul filters the list
	// of services by its instances' fields).
	Instances bool
}

// ServicesResponse maps each service name to the sorted union of its
// instances' tags.
type ServicesResponse struct {
	QueryMeta
	Services map[string][]string
	// Instances, when asked for (Services is then nil), holds every
	// instance the caller may read, with its node and without checks
	// (catalog.Store.ServiceNodes).
	Instances []catalog.ServiceInstance
}

// NodeServicesRequest asks for one node and the services on it.
type NodeServicesRequest struct {
	QueryOptions
	Node      string // required
	Forwarded bool
}

// NodeServicesResponse holds the node (nil when there is no such node) and
// its services sorted by ID.
type NodeServicesResponse struct {
	QueryMeta
	Node     *catalog.Node
	Services []*catalog.Service
}

// ReverseRequest asks what holds an address, for PTR answers.
type ReverseRequest struct {
	QueryOptions
	Addr      string // required: an IPv4 or IPv6 address, in any spelling netip parses, without a zone
	Forwarded bool
}

// ReverseResponse holds the names of the nodes registered with the address
// and of the services registered with it as their own address (not their
// node's), each name once, sorted: what catalog.Store.Reverse returns.
type ReverseResponse struct {
	QueryMeta
	Nodes    []string
	Services []string
}

// NodeChecksRequest asks for every check of one node: its own and its
// services'.
type NodeChecksRequest struct {
	QueryOptions
	Node      string // required, matched case-insensitively
	Forwarded bool
}

// ServiceChecksRequest asks for the service-level checks of every instance
// of one service (not those of the instances' nodes).
type ServiceChecksRequest struct {
	QueryOptions
	Service   string // required, matched case-insensitively
	Forwarded bool
}

// ChecksInStateRequest asks for every check in one state.
type ChecksInStateRequest struct {
	QueryOptions
	// State is required: passing, warning, critical, maintenance, or any
	// (catalog.HealthAny) for every check.
	State     string
	Forwarded bool
}

// ChecksResponse answers NodeChecks, ServiceChecks and ChecksInState: the
// checks sorted by node, then check ID; the index is the checks table's.
type ChecksResponse struct {
	QueryMeta
	Checks []*catalog.Check
}

// ChangesRequest opens the change feed (MethodCatalogFeed), the stream an
// agent's cache follows: which names change after MinQueryIndex, told as
// they change, and a reply with no news after MaxQueryTime of quiet. It is
// answered by the server it reaches (AllowStale and RequireConsistent do
// not apply), or relayed from a server of Datacenter.
type ChangesRequest struct {
	QueryOptions
}

// ChangesResponse is one reply of the feed: the changes since the previous
// one. Changes.Index is the index reached; QueryMeta.Index equals it (at
// least 1).
type ChangesResponse struct {
	QueryMeta
	Changes catalog.Changes
}

// DatacentersRequest asks a server for the datacenters it knows: its own
// and those with a server in its WAN pool. It is answered by the server
// it is sent to, never forwarded.
type DatacentersRequest struct{}

// DatacentersResponse lists datacenter names, sorted.
type DatacentersResponse struct {
	Datacenters []string
}
