package consensus

import (
	"log/slog"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// EndpointsConfig is what a server's endpoints are built from. A prepared
// query's NearestN fails over to the datacenters of the Catalog config's
// Router, nearest first by the WAN coordinates, unless PreparedQuery says
// otherwise.
type EndpointsConfig struct {
	Catalog       CatalogConfig
	Coordinate    CoordinateConfig
	PreparedQuery PreparedQueryConfig
}

// Endpoints are a server's RPC endpoints.
type Endpoints struct {
	Catalog    *Catalog
	Coordinate *Coordinate
	rs         *rpc.Server
}

// RegisterEndpoints builds a server's endpoints on srv, forwarding through
// pool, and registers them on rs, where the door and other agents call
// them. Operator, Keyring and Event come later (RegisterOperator).
func RegisterEndpoints(rs *rpc.Server, srv *Server, pool *rpc.Pool, cfg EndpointsConfig, logger *slog.Logger) (*Endpoints, error) {
	cat, err := NewCatalog(srv, pool, cfg.Catalog)
	if err != nil {
		return nil, err
	}
	coord, err := NewCoordinate(cat, cfg.Coordinate, logger)
	if err != nil {
		return nil, err
	}
	status, err := NewStatus(srv, cfg.Catalog.Datacenter, cat)
	if err != nil {
		return nil, err
	}
	if r := cfg.Catalog.Router; cfg.PreparedQuery.Datacenters == nil && r != nil {
		cfg.PreparedQuery.Datacenters = func() []string { return coord.NearestDatacenters(r.Datacenters()) }
	}
	pq, err := NewPreparedQuery(cat, cfg.PreparedQuery)
	if err != nil {
		return nil, err
	}
	for name, ep := range map[string]any{
		rpc.SnapshotEndpoint:      NewSnapshot(cat),
		rpc.StatusEndpoint:        status,
		rpc.PreparedQueryEndpoint: pq,
		rpc.ACLEndpoint:           NewACL(cat),
		rpc.KVSEndpoint:           NewKVS(cat),
		rpc.TxnEndpoint:           NewTxn(cat),
		rpc.SessionEndpoint:       NewSession(cat),
		rpc.CoordinateEndpoint:    coord,
	} {
		if err := rs.Register(name, ep); err != nil {
			return nil, err
		}
	}
	if err := cat.Publish(rs); err != nil {
		return nil, err
	}
	return &Endpoints{Catalog: cat, Coordinate: coord, rs: rs}, nil
}

// RegisterOperator registers the endpoints that need the leader duties or
// the pools, once both exist: Operator (the leader's view of the
// servers), Keyring (changes the pools) and Event (fires user events into
// the LAN pool).
func (e *Endpoints) RegisterOperator(leader *Leader, lan, wan *gossip.Pool) error {
	operator, err := NewOperator(e.Catalog, leader)
	if err != nil {
		return err
	}
	if err := e.rs.Register(rpc.OperatorEndpoint, operator); err != nil {
		return err
	}
	keyring, err := NewKeyring(e.Catalog, lan, wan)
	if err != nil {
		return err
	}
	if err := e.rs.Register(rpc.KeyringEndpoint, keyring); err != nil {
		return err
	}
	event, err := NewEvent(e.Catalog, lan)
	if err != nil {
		return err
	}
	return e.rs.Register(rpc.EventEndpoint, event)
}
