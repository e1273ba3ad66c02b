package catalog

// RegisterRequest registers or updates a node and, optionally, one service
// and checks on it, in one atomic write.
type RegisterRequest struct {
	Datacenter string
	ID         string // node ID
	Node       string
	Address    string
	NodeMeta   map[string]string
	// TaggedAddresses are the node's (Node.TaggedAddresses).
	TaggedAddresses map[string]string
	Service         *Service // optional
	Checks          []*Check // optional; Node is filled in from the request
	// SkipNodeUpdate leaves an existing node row as it is (used when an
	// agent re-syncs its services and must not overwrite fresher node data).
	SkipNodeUpdate bool
	// CreateMissingNode makes a SkipNodeUpdate registration of a node
	// that is not in the catalog create it (with Address, "" when not
	// given), as Consul does. The servers set it on every registration
	// they write; entries written before it existed leave it false and
	// so, replayed, still fail with ErrNotFound as they did.
	CreateMissingNode bool
}

// DeregisterRequest removes a service, a check, or (with neither set) a
// whole node with its services and checks.
type DeregisterRequest struct {
	Datacenter string
	Node       string
	ServiceID  string
	CheckID    string
}
