package rpc

// This file holds the wire types of the Snapshot endpoint, which package
// consensus serves: saving the catalog to an archive and restoring one,
// for the agent's /v1/snapshot API. Like the Catalog's, they live here so
// callers need not import consensus.
//
// An archive travels whole in one message, so it is bounded by
// MaxMessageSize (8 MiB by default; archives are gzip'ed, and a catalog of
// tens of thousands of instances fits).

// SnapshotEndpoint is the name the Snapshot endpoint is registered under on
// the Server; its methods are called as "Snapshot.<Method>".
const SnapshotEndpoint = "Snapshot"

// The methods of the Snapshot endpoint, as Pool.Call names them.
const (
	MethodSnapshotSave    = SnapshotEndpoint + ".Save"
	MethodSnapshotRestore = SnapshotEndpoint + ".Restore"
)

// SnapshotSaveRequest asks for an archive of the catalog. It is answered
// by the leader, or with AllowStale by the receiving server from its own
// state. MinQueryIndex is ignored: a save never blocks.
type SnapshotSaveRequest struct {
	QueryOptions
	Forwarded bool
}

// SnapshotSaveResponse holds the archive; Index (in QueryMeta) is the
// catalog's index it was saved at.
type SnapshotSaveResponse struct {
	QueryMeta
	Archive []byte
}

// SnapshotRestoreRequest restores an archive into every server of the
// datacenter. The leader verifies it first: a corrupted or invalid archive
// fails with a *catalog.FieldError naming "snapshot", and nothing changes.
type SnapshotRestoreRequest struct {
	WriteRequest
	Archive   []byte
	Forwarded bool
}

// SnapshotRestoreResponse answers a restore.
type SnapshotRestoreResponse struct {
	// Index is the catalog's index after the restore: above every index
	// the datacenter used before it.
	Index uint64
	// SavedIndex and SavedDatacenter are the archive's: the index and
	// datacenter it was saved at.
	SavedIndex      uint64
	SavedDatacenter string
}
