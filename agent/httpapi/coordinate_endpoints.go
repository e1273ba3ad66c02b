package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// coordinateEntry is a coordinate as Consul's API gives it.
type coordinateEntry struct {
	Node      string
	Segment   string
	Partition string
	Coord     *catalog.Coordinate
}

// datacenterMap is one datacenter of GET /v1/coordinate/datacenters.
type datacenterMap struct {
	Datacenter  string
	AreaID      string
	Coordinates []coordinateEntry
}

func toCoordinateEntries(in []*catalog.CoordinateEntry) []coordinateEntry {
	out := make([]coordinateEntry, 0, len(in))
	for _, e := range in {
		out = append(out, coordinateEntry{Node: e.Node, Segment: e.Segment, Coord: e.Coord})
	}
	return out
}

// coordinateDatacenters asks a server of this datacenter, whose WAN pool
// has measured the servers of every datacenter, for their coordinates,
// sorted by datacenter.
func (s *Server) coordinateDatacenters(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
	defer cancel()
	var reply rpc.DatacenterCoordinatesResponse
	if err := s.door.RPC(ctx, rpc.MethodCoordinateListDatacenters, &rpc.DatacentersRequest{}, &reply); err != nil {
		return err
	}
	out := make([]datacenterMap, 0, len(reply.Datacenters))
	for _, dc := range reply.Datacenters {
		out = append(out, datacenterMap{Datacenter: dc.Datacenter, AreaID: dc.AreaID, Coordinates: toCoordinateEntries(dc.Coordinates)})
	}
	writeJSONPretty(w, r, out)
	return nil
}

// coordinateNodes answers every node's coordinate, sorted by node.
func (s *Server) coordinateNodes(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	var reply rpc.CoordinatesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodCoordinateListNodes, &rpc.CoordinateListRequest{QueryOptions: opts}, &reply); err != nil {
		return err
	}
	out := toCoordinateEntries(reply.Coordinates)
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, reply.QueryMeta, out)
	return nil
}

// coordinateNode answers a node without a coordinate with a 404, as
// Consul does.
func (s *Server) coordinateNode(w http.ResponseWriter, r *http.Request) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	node := r.PathValue("node")
	if err := catalog.ValidateNodeName("node", node); err != nil {
		return err
	}
	var reply rpc.CoordinatesResponse
	if err := s.door.RPC(r.Context(), rpc.MethodCoordinateNode, &rpc.CoordinateNodeRequest{QueryOptions: opts, Node: node}, &reply); err != nil {
		return err
	}
	if len(reply.Coordinates) == 0 {
		setMetaHeaders(w, reply.QueryMeta)
		return notFound("node %q has no network coordinate", node)
	}
	writeRead(w, r, reply.QueryMeta, toCoordinateEntries(reply.Coordinates))
	return nil
}

// coordinateUpdate takes a coordinate as Consul's clients send it. The
// servers check it (dimensions, NaN, infinity) and the token (node:write).
func (s *Server) coordinateUpdate(w http.ResponseWriter, r *http.Request) error {
	var body coordinateEntry
	if err := s.decodeBodyLenient(w, r, &body); err != nil {
		return err
	}
	if body.Node == "" {
		return badRequest("Node", "is required")
	}
	if body.Segment != "" {
		return badRequest("Segment", "must be empty: cairn has no network segments")
	}
	if err := catalog.ValidateCoordinate("Coord", body.Coord); err != nil {
		return err
	}
	args := &rpc.CoordinateUpdateRequest{WriteRequest: rpc.WriteRequest{Datacenter: dcParam(r, "")}, Node: body.Node, Coord: body.Coord}
	if err := s.door.RPC(r.Context(), rpc.MethodCoordinateUpdate, args, nil); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

// near is ?near on the reads that sort by it (catalog nodes and service,
// health service), as the node name the servers sort by: "_agent" is this
// agent's node, as in Consul; "" keeps the catalog's order.
func (s *Server) near(r *http.Request) string {
	near := r.URL.Query().Get("near")
	if strings.EqualFold(near, "_agent") {
		return s.cfg.NodeName
	}
	return near
}
