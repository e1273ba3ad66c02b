package consensus

import (
	"bytes"

	"github.com/cairndns/cairn/rpc"
)

// Snapshot is the RPC endpoint that saves the catalog to an archive and
// restores one (archive.go), for the agent's /v1/snapshot API. It routes
// requests as the Catalog endpoint it is built on does: a request naming
// another datacenter goes there; a save is answered by the leader (any
// server with AllowStale); a restore is verified by the receiving server,
// so a corrupted archive is refused without a hop, and then applied by the
// leader, through Raft, to every server.
//
// Register it on an rpc.Server under rpc.SnapshotEndpoint. Its methods are
// called by net/rpc, each on its own goroutine; errors are returned
// through rpc.WireError, so a bad archive reaches the caller as a
// *catalog.FieldError naming "snapshot". Closing the Catalog endpoint ends
// its forwards too.
type Snapshot struct {
	cat *Catalog
}

// NewSnapshot returns the Snapshot endpoint of the server cat serves.
func NewSnapshot(cat *Catalog) *Snapshot { return &Snapshot{cat: cat} }

// Save returns an archive of the catalog.
func (sn *Snapshot) Save(args *rpc.SnapshotSaveRequest, reply *rpc.SnapshotSaveResponse) (err error) {
	defer wireError(&err)
	c := sn.cat
	args.MinQueryIndex = 0 // a save never blocks
	if done, err := c.forwardRead(rpc.MethodSnapshotSave, &args.QueryOptions, &args.Forwarded, args, reply); done {
		return err
	}
	var buf bytes.Buffer
	meta, err := c.srv.SaveSnapshot(&buf, c.cfg.Datacenter)
	if err != nil {
		return err
	}
	reply.Archive = buf.Bytes()
	reply.Index = max(meta.Index, 1) // never 0, as every read's
	reply.KnownLeader = c.srv.Leader() != ""
	reply.LastContact = c.srv.LastContact()
	return nil
}

// Restore verifies an archive and restores it into every server of the
// datacenter, returning once a quorum holds it.
func (sn *Snapshot) Restore(args *rpc.SnapshotRestoreRequest, reply *rpc.SnapshotRestoreResponse) (err error) {
	defer wireError(&err)
	c := sn.cat
	if done, err := c.forwardDC(rpc.MethodSnapshotRestore, args.Datacenter, &args.FromDatacenter, true, args, reply, 0); done {
		return err
	}
	if _, err := VerifyArchive(bytes.NewReader(args.Archive)); err != nil {
		return err
	}
	if done, err := c.forward(rpc.MethodSnapshotRestore, &args.Forwarded, args, reply, 0); done {
		return err
	}
	meta, index, err := c.srv.RestoreSnapshot(c.ctx, bytes.NewReader(args.Archive))
	if err != nil {
		return err
	}
	reply.Index, reply.SavedIndex, reply.SavedDatacenter = index, meta.Index, meta.Datacenter
	return nil
}
