package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// Coordinates reads and writes nodes' network coordinates (Consul's
// /v1/coordinate/...). A Catalog that also satisfies it serves those
// endpoints; without it they answer 404. Handlers call it from their own
// goroutines, several at once.
type Coordinates interface {
	// CoordinateNodes returns every node's coordinate, sorted by node.
	CoordinateNodes(ctx context.Context, opts QueryOptions) ([]*catalog.CoordinateEntry, QueryMeta, error)
	// CoordinateNode returns node's coordinate: none when it has none.
	CoordinateNode(ctx context.Context, opts QueryOptions, node string) ([]*catalog.CoordinateEntry, QueryMeta, error)
	// CoordinateDatacenters returns the WAN coordinates of every
	// datacenter's servers, sorted by datacenter.
	CoordinateDatacenters(ctx context.Context) ([]rpc.DatacenterCoordinates, error)
	// CoordinateUpdate sends node's coordinate to the servers of
	// datacenter dc ("" for the agent's).
	CoordinateUpdate(ctx context.Context, dc, node string, c *catalog.Coordinate) error
}

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

// coordinates returns the Catalog's Coordinates, or a 404 when it has none.
func (s *Server) coordinates() (Coordinates, error) {
	if c, ok := s.catalog.(Coordinates); ok {
		return c, nil
	}
	return nil, notFound("network coordinates are not served by this agent")
}

func (s *Server) coordinateDatacenters(w http.ResponseWriter, r *http.Request) error {
	c, err := s.coordinates()
	if err != nil {
		return err
	}
	dcs, err := c.CoordinateDatacenters(r.Context())
	if err != nil {
		return err
	}
	out := make([]datacenterMap, 0, len(dcs))
	for _, dc := range dcs {
		out = append(out, datacenterMap{Datacenter: dc.Datacenter, AreaID: dc.AreaID, Coordinates: toCoordinateEntries(dc.Coordinates)})
	}
	writeJSONPretty(w, r, out)
	return nil
}

func (s *Server) coordinateNodes(w http.ResponseWriter, r *http.Request) error {
	c, err := s.coordinates()
	if err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	all, meta, err := c.CoordinateNodes(r.Context(), opts)
	if err != nil {
		return err
	}
	out := toCoordinateEntries(all)
	if out, err = applyFilter(r, out); err != nil {
		return err
	}
	writeRead(w, r, meta, out)
	return nil
}

// coordinateNode answers a node without a coordinate with a 404, as
// Consul does.
func (s *Server) coordinateNode(w http.ResponseWriter, r *http.Request) error {
	c, err := s.coordinates()
	if err != nil {
		return err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	node := r.PathValue("node")
	if err := catalog.ValidateNodeName("node", node); err != nil {
		return err
	}
	all, meta, err := c.CoordinateNode(r.Context(), opts, node)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		setMetaHeaders(w, meta)
		return notFound("node %q has no network coordinate", node)
	}
	writeRead(w, r, meta, toCoordinateEntries(all))
	return nil
}

// coordinateUpdate takes a coordinate as Consul's clients send it. The
// servers check it (dimensions, NaN, infinity) and the token (node:write).
func (s *Server) coordinateUpdate(w http.ResponseWriter, r *http.Request) error {
	c, err := s.coordinates()
	if err != nil {
		return err
	}
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
	if err := c.CoordinateUpdate(r.Context(), dcParam(r, ""), body.Node, body.Coord); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, true)
	return nil
}

// resolveNear turns ?near into the node name the servers sort by:
// "_agent" is this agent's node, as in Consul.
func (s *Server) resolveNear(near string) string {
	if strings.EqualFold(near, "_agent") {
		return s.cfg.NodeName
	}
	return near
}
