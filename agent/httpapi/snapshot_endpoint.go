package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// Snapshots saves and restores the catalog of the agent's datacenter (or
// of dc) on its servers. It is optional: the Cluster given to New provides
// it when it has these methods too (an optional interface, as
// http.Flusher is for a ResponseWriter), and without it /v1/snapshot
// answers 404. Handlers call it from their own goroutines, several at once.
type Snapshots interface {
	// SaveSnapshot returns an archive of the catalog and the index it
	// was saved at; with stale any server may answer, else the leader.
	SaveSnapshot(ctx context.Context, dc string, stale bool) (archive []byte, index uint64, err error)
	// RestoreSnapshot restores an archive into every server and returns
	// the catalog's index afterwards. An archive that fails verification
	// is a *catalog.FieldError naming "snapshot", and nothing changed.
	RestoreSnapshot(ctx context.Context, dc string, archive []byte) (index uint64, err error)
}

// SnapshotContentType is the Content-Type of GET /v1/snapshot: the archive
// is a gzip'ed tar.
const SnapshotContentType = "application/gzip"

// maxSnapshotBytes caps the archive PUT /v1/snapshot accepts. An archive
// travels to the servers in one RPC message, whose default cap is 8 MiB;
// this leaves room for the envelope.
const maxSnapshotBytes = 8<<20 - 64<<10

// snapshot answers GET /v1/snapshot with an archive of the catalog and PUT
// /v1/snapshot by restoring the archive in the body, as Consul's endpoint
// does (?dc= and, for GET, ?stale).
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) error {
	snaps, ok := s.cluster.(Snapshots)
	if !ok {
		return notFound("snapshots are not available on this agent")
	}
	dc := r.URL.Query().Get("dc")
	if r.Method == http.MethodGet {
		archive, index, err := snaps.SaveSnapshot(r.Context(), dc, boolParam(r, "stale"))
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", SnapshotContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(archive)))
		w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(archive)
		return nil
	}
	archive, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSnapshotBytes))
	if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return badRequest("body", "a snapshot archive must be at most %d bytes", tooBig.Limit)
	}
	if err != nil {
		return badRequest("body", "read the snapshot archive: %v", err)
	}
	if len(archive) == 0 {
		return badRequest("body", "is empty; the snapshot archive is required")
	}
	index, err := snaps.RestoreSnapshot(r.Context(), dc, archive)
	if err != nil {
		return err
	}
	w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
	w.WriteHeader(http.StatusOK)
	return nil
}
