package agent

import (
	"context"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// The HTTP API's network coordinates (/v1/coordinate/...), through the
// door like every other read and write.

var _ httpapi.Coordinates = httpBackend{}

func (h httpBackend) CoordinateNodes(ctx context.Context, opts httpapi.QueryOptions) ([]*catalog.CoordinateEntry, httpapi.QueryMeta, error) {
	var reply rpc.CoordinatesResponse
	err := h.door.RPC(ctx, rpc.MethodCoordinateListNodes, &rpc.CoordinateListRequest{QueryOptions: rpcOptions(opts)}, &reply)
	return reply.Coordinates, toMeta(reply.QueryMeta), err
}

func (h httpBackend) CoordinateNode(ctx context.Context, opts httpapi.QueryOptions, node string) ([]*catalog.CoordinateEntry, httpapi.QueryMeta, error) {
	var reply rpc.CoordinatesResponse
	err := h.door.RPC(ctx, rpc.MethodCoordinateNode, &rpc.CoordinateNodeRequest{QueryOptions: rpcOptions(opts), Node: node}, &reply)
	return reply.Coordinates, toMeta(reply.QueryMeta), err
}

// CoordinateDatacenters asks a server of this datacenter, whose WAN pool
// has measured the servers of every datacenter.
func (h httpBackend) CoordinateDatacenters(ctx context.Context) ([]rpc.DatacenterCoordinates, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var reply rpc.DatacenterCoordinatesResponse
	if err := h.door.RPC(ctx, rpc.MethodCoordinateListDatacenters, &rpc.DatacentersRequest{}, &reply); err != nil {
		return nil, err
	}
	return reply.Datacenters, nil
}

func (h httpBackend) CoordinateUpdate(ctx context.Context, dc, node string, c *catalog.Coordinate) error {
	args := &rpc.CoordinateUpdateRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Node: node, Coord: c}
	return h.door.RPC(ctx, rpc.MethodCoordinateUpdate, args, nil)
}
