package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/rpc"
)

// The HTTP API's /v1/snapshot is served through membership, which the API
// takes as its Cluster and finds to be Snapshots as well.
var _ httpapi.Snapshots = membership{}

// SaveSnapshot returns an archive of the catalog of datacenter dc ("" for
// the agent's) and the index it was saved at. Servers hold the catalog: a
// clustering server asks its own Snapshot endpoint (which forwards to the
// leader, or to dc), a client asks a server, a single server saves its
// own.
func (m membership) SaveSnapshot(ctx context.Context, dc string, stale bool) ([]byte, uint64, error) {
	a := m.a
	args := &rpc.SnapshotSaveRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: stale}}
	var reply rpc.SnapshotSaveResponse
	if sent, err := m.snapshotCall(ctx, rpc.MethodSnapshotSave, false, args, &reply); sent {
		if err != nil {
			return nil, 0, fmt.Errorf("save snapshot: %w", err)
		}
		return reply.Archive, reply.Index, nil
	}
	if err := m.ownDatacenter(dc); err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	meta, err := a.server.SaveSnapshot(&buf, a.cfg.Datacenter)
	if err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), max(meta.Index, 1), nil
}

// RestoreSnapshot restores archive into every server of datacenter dc (""
// for the agent's) and returns the catalog's index afterwards. A bad
// archive is a *catalog.FieldError naming "snapshot".
func (m membership) RestoreSnapshot(ctx context.Context, dc string, archive []byte) (uint64, error) {
	a := m.a
	args := &rpc.SnapshotRestoreRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Archive: archive}
	var reply rpc.SnapshotRestoreResponse
	if sent, err := m.snapshotCall(ctx, rpc.MethodSnapshotRestore, true, args, &reply); sent {
		if err != nil {
			return 0, fmt.Errorf("restore snapshot: %w", err)
		}
		return reply.Index, nil
	}
	if err := m.ownDatacenter(dc); err != nil {
		return 0, err
	}
	_, index, err := a.server.RestoreSnapshot(ctx, bytes.NewReader(archive))
	return index, err
}

// snapshotCall sends a Snapshot call where this agent sends its catalog
// calls: a clustering server to its own endpoint, a client to a server.
// sent is false on a single server, which has no RPC: the caller then uses
// its server directly.
func (m membership) snapshotCall(ctx context.Context, method string, write bool, args, reply any) (sent bool, err error) {
	a := m.a
	if a.rpcServer != nil {
		return true, a.rpcPool.Call(ctx, a.rpcServer.RaftLayer().Addr().String(), method, args, reply)
	}
	if rb, ok := a.backend.(*rpcBackend); ok {
		return true, rb.call(ctx, method, write, args, reply)
	}
	return false, nil
}

// ownDatacenter refuses another datacenter on a single server, which is
// in no WAN pool.
func (m membership) ownDatacenter(dc string) error {
	if dc == "" || strings.EqualFold(dc, m.a.cfg.Datacenter) {
		return nil
	}
	return fmt.Errorf("datacenter %q: a single server reaches no other: %w", dc, consensus.ErrNoPathToDatacenter)
}
