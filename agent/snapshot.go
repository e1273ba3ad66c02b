package agent

import (
	"context"
	"fmt"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/rpc"
)

// The HTTP API's /v1/snapshot is served through membership, which the API
// takes as its Cluster and finds to be Snapshots as well.
var _ httpapi.Snapshots = membership{}

// SaveSnapshot returns an archive of the catalog of datacenter dc ("" for
// the agent's) and the index it was saved at, from the Snapshot endpoint
// (which forwards to the leader, or to dc).
func (m membership) SaveSnapshot(ctx context.Context, dc string, stale bool) ([]byte, uint64, error) {
	args := &rpc.SnapshotSaveRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: stale}}
	var reply rpc.SnapshotSaveResponse
	if err := m.a.door.RPC(ctx, rpc.MethodSnapshotSave, args, &reply); err != nil {
		return nil, 0, fmt.Errorf("save snapshot: %w", err)
	}
	return reply.Archive, reply.Index, nil
}

// AuthorizeRestore asks a server of datacenter dc ("" for the agent's)
// whether the request's token may restore a snapshot there. It is asked
// whatever the agent's own ACL configuration says: the servers decide.
func (m membership) AuthorizeRestore(ctx context.Context, dc string) error {
	args := &rpc.SnapshotAuthorizeRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: true}}
	if err := m.a.door.RPC(ctx, rpc.MethodSnapshotAuthorize, args, &struct{}{}); err != nil {
		return fmt.Errorf("authorize snapshot restore: %w", err)
	}
	return nil
}

// RestoreSnapshot restores archive into every server of datacenter dc (""
// for the agent's) and returns the catalog's index afterwards. A bad
// archive is a *catalog.FieldError naming "snapshot".
func (m membership) RestoreSnapshot(ctx context.Context, dc string, archive []byte) (uint64, error) {
	args := &rpc.SnapshotRestoreRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Archive: archive}
	var reply rpc.SnapshotRestoreResponse
	if err := m.a.door.RPC(ctx, rpc.MethodSnapshotRestore, args, &reply); err != nil {
		return 0, fmt.Errorf("restore snapshot: %w", err)
	}
	return reply.Index, nil
}
