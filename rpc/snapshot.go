package rpc

import "time"

// This file holds the wire types of the Snapshot endpoint, which package
// consensus serves: saving the catalog to an archive and restoring one,
// for the agent's /v1/snapshot API. Like the Catalog's, they live here so
// callers need not import consensus.
//
// An archive travels whole in one message: a saved one in a reply, bounded
// by MaxReplySize (256 MiB by default), a restored one in a request,
// bounded by MaxMessageSize (8 MiB by default; archives are gzip'ed, and
// one of 100,000 instances with a check each is about 3 MiB). A restore is
// authorized before any of it is read: by the agent, which asks Authorize
// before it reads the HTTP body, and by every server the request reaches,
// before it forwards the archive or decompresses a byte of it.

// SnapshotEndpoint is the name the Snapshot endpoint is registered under on
// the Server; its methods are called as "Snapshot.<Method>".
const SnapshotEndpoint = "Snapshot"

// The methods of the Snapshot endpoint, as Pool.Call names them.
const (
	MethodSnapshotSave      = SnapshotEndpoint + ".Save"
	MethodSnapshotRestore   = SnapshotEndpoint + ".Restore"
	MethodSnapshotAuthorize = SnapshotEndpoint + ".Authorize"
)

// SnapshotAuthorizeRequest asks whether the request's token may restore a
// snapshot into Datacenter (a management token, as in Consul): an agent
// asks it before it reads an archive from its HTTP client, so that a
// caller without the right token never gets a byte of its upload read. It
// is answered by any server of that datacenter from its own copy of the
// ACL data, with nil or an error wrapping ErrPermissionDenied or
// ErrACLNotFound; with ACLs off, nil.
type SnapshotAuthorizeRequest struct {
	QueryOptions
}

// SnapshotWait is how long the servers may take over one save or restore,
// given on top of a caller's usual deadline (a client agent's hold, a
// forward's timeout) as a blocking query's wait is: through the
// MaxBlockingWait of both requests. Saving, checking and installing a large
// catalog on every server takes longer than a write's usual budget: a
// restore of 100,000 instances with a check each took over 15s on a
// loaded 2-core machine (examples/bench/scale), and its forward then
// failed while the leader went on restoring.
const SnapshotWait = 2 * time.Minute

// SnapshotSaveRequest asks for an archive of the catalog. It is answered
// by the leader, or with AllowStale by the receiving server from its own
// state. MinQueryIndex is ignored: a save never blocks.
type SnapshotSaveRequest struct {
	QueryOptions
	Forwarded bool
}

// MaxBlockingWait is SnapshotWait: a save is not a blocking query, but
// may hold its caller as long as one.
func (*SnapshotSaveRequest) MaxBlockingWait() time.Duration { return SnapshotWait }

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

// MaxBlockingWait is SnapshotWait, as for a save.
func (*SnapshotRestoreRequest) MaxBlockingWait() time.Duration { return SnapshotWait }

var (
	_ Blocking = (*SnapshotSaveRequest)(nil)
	_ Blocking = (*SnapshotRestoreRequest)(nil)
)

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
