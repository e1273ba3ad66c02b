package consensus

import (
	"bytes"
	"context"

	"github.com/cairndns/cairn/rpc"
)

// Snapshot is the RPC endpoint that saves the catalog to an archive and
// restores one (archive.go), for the agent's /v1/snapshot API. It routes
// requests as the Catalog endpoint it is built on does: a request naming
// another datacenter goes there; a save is answered by the leader (any
// server with AllowStale); a restore is authorized by every server it
// reaches, and decompressed, checked and applied by the leader alone,
// through Raft, to every server.
//
// Register it on an rpc.Server under rpc.SnapshotEndpoint. Its methods are
// called by the rpc.Server, each on a goroutine of its own (or the
// caller's, through rpc.Server.Call), with the caller's ctx, which bounds
// their forwards and the restore as the Catalog's methods' are bounded
// (their forwards get rpc.SnapshotWait more); closing the Catalog endpoint
// ends them too. Their errors reach the caller through rpc.WireError, so a
// bad archive reaches the caller as a *catalog.FieldError naming
// "snapshot".
type Snapshot struct {
	cat *Catalog
}

// NewSnapshot returns the Snapshot endpoint of the server cat serves.
func NewSnapshot(cat *Catalog) *Snapshot { return &Snapshot{cat: cat} }

// Save returns an archive of the catalog.
func (sn *Snapshot) Save(ctx context.Context, args *rpc.SnapshotSaveRequest, reply *rpc.SnapshotSaveResponse) error {
	c := sn.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	args.MinQueryIndex = 0 // a save never blocks
	if err := args.Validate(); err != nil {
		return err
	}
	// forwardRead's steps, with the forwards given a save's time
	// (rpc.SnapshotWait) rather than a blocking query's.
	if done, err := c.forwardDC(ctx, rpc.MethodSnapshotSave, args.Datacenter, &args.FromDatacenter, false, args, reply, args.MaxBlockingWait()); done {
		return err
	}
	// Authorized here, before a hop to the leader, as a restore is.
	if err := c.requireManagement(args.Token); err != nil {
		return err
	}
	if !args.AllowStale {
		if done, err := c.forward(ctx, rpc.MethodSnapshotSave, &args.Forwarded, args, reply, args.MaxBlockingWait()); done {
			return err
		}
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

// Authorize answers whether the request's token may restore a snapshot
// into its datacenter, from this server's copy of the ACL data: a
// datacenter's servers hold the same tokens, so no hop to the leader.
func (sn *Snapshot) Authorize(ctx context.Context, args *rpc.SnapshotAuthorizeRequest, _ *struct{}) error {
	c := sn.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	if done, err := c.forwardDC(ctx, rpc.MethodSnapshotAuthorize, args.Datacenter, &args.FromDatacenter, false, args, &struct{}{}, 0); done {
		return err
	}
	return c.requireManagement(args.Token)
}

// Restore authorizes a restore, then restores the archive into every
// server of the datacenter, returning once a quorum holds it.
func (sn *Snapshot) Restore(ctx context.Context, args *rpc.SnapshotRestoreRequest, reply *rpc.SnapshotRestoreResponse) error {
	c := sn.cat
	ctx, release := c.requestContext(ctx)
	defer release()
	// Both forwards get a restore's time (rpc.SnapshotWait), beyond a
	// write's: installing a large catalog on every server takes seconds.
	// Another datacenter's servers hold its tokens: they authorize.
	if done, err := c.forwardDC(ctx, rpc.MethodSnapshotRestore, args.Datacenter, &args.FromDatacenter, true, args, reply, args.MaxBlockingWait()); done {
		return err
	}
	// Every server the archive reaches authorizes before it forwards or
	// reads a byte of it: a follower that decompressed first was made to
	// inflate a 400 KB upload to 0.9 GB for a caller with no token. A
	// follower forwards the archive as it came; the leader alone
	// decompresses it.
	if err := c.requireManagement(args.Token); err != nil {
		return err
	}
	if done, err := c.forward(ctx, rpc.MethodSnapshotRestore, &args.Forwarded, args, reply, args.MaxBlockingWait()); done {
		return err
	}
	meta, index, err := c.srv.RestoreSnapshot(ctx, bytes.NewReader(args.Archive))
	if err != nil {
		return err
	}
	reply.Index, reply.SavedIndex, reply.SavedDatacenter = index, meta.Index, meta.Datacenter
	return nil
}
