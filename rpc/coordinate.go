package rpc

import "github.com/cairndns/cairn/catalog"

// This file holds the wire types of the Coordinate endpoint (nodes'
// network coordinates), served by package consensus. Fields are only ever
// added.

// CoordinateEndpoint is the name the Coordinate endpoint is registered
// under on the Server.
const CoordinateEndpoint = "Coordinate"

// The methods of the Coordinate endpoint, as Pool.Call names them.
const (
	// MethodCoordinateUpdate queues a node's coordinate for the leader's
	// next batch (CoordinateUpdateRequest → struct{}).
	MethodCoordinateUpdate = CoordinateEndpoint + ".Update"
	// MethodCoordinateListNodes reads every node's coordinate
	// (CoordinateListRequest → CoordinatesResponse).
	MethodCoordinateListNodes = CoordinateEndpoint + ".ListNodes"
	// MethodCoordinateNode reads one node's coordinate
	// (CoordinateNodeRequest → CoordinatesResponse).
	MethodCoordinateNode = CoordinateEndpoint + ".Node"
	// MethodCoordinateListDatacenters reads the WAN coordinates of every
	// datacenter's servers (DatacentersRequest →
	// DatacenterCoordinatesResponse).
	MethodCoordinateListDatacenters = CoordinateEndpoint + ".ListDatacenters"
)

// CoordinateUpdateRequest sends Node's LAN coordinate. The server answers
// once the update is queued, not once it is applied: the leader writes the
// queue to Raft every few seconds, in batches.
type CoordinateUpdateRequest struct {
	WriteRequest
	Node      string
	Segment   string // always "" (Consul's network segment)
	Coord     *catalog.Coordinate
	Forwarded bool
}

func (*CoordinateUpdateRequest) isIdempotent() {}

// CoordinateListRequest asks for every node's coordinate.
type CoordinateListRequest struct {
	QueryOptions
	Forwarded bool
}

// CoordinateNodeRequest asks for one node's coordinate.
type CoordinateNodeRequest struct {
	QueryOptions
	Node      string
	Forwarded bool
}

// CoordinatesResponse holds coordinates sorted by node name: none when
// Node's node has none.
type CoordinatesResponse struct {
	QueryMeta
	Coordinates []*catalog.CoordinateEntry
}

// DatacenterCoordinates are the WAN coordinates of one datacenter's
// servers, as this server's WAN pool knows them.
type DatacenterCoordinates struct {
	Datacenter  string
	AreaID      string // always "wan"
	Coordinates []*catalog.CoordinateEntry
}

// DatacenterCoordinatesResponse lists datacenters sorted by name.
type DatacenterCoordinatesResponse struct {
	Datacenters []DatacenterCoordinates
}
