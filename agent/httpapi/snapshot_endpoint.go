package httpapi

import (
	"bytes"
	"context"
	"errors"
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
	// AuthorizeRestore asks the servers of dc whether the request's
	// token may restore a snapshot there: nil, or an error wrapping
	// rpc.ErrPermissionDenied or rpc.ErrACLNotFound.
	AuthorizeRestore(ctx context.Context, dc string) error
	// RestoreSnapshot restores an archive into every server and returns
	// the catalog's index afterwards. An archive that fails verification
	// is a *catalog.FieldError naming "snapshot", and nothing changed.
	RestoreSnapshot(ctx context.Context, dc string, archive []byte) (index uint64, err error)
}

// SnapshotContentType is the Content-Type of GET /v1/snapshot: the archive
// is a gzip'ed tar.
const SnapshotContentType = "application/gzip"

// MaxSnapshotBytes caps the archive PUT /v1/snapshot accepts, gzip'ed as
// it comes. An archive travels to the servers in one RPC message, whose
// default cap is 8 MiB; this leaves room for the envelope.
const MaxSnapshotBytes = 8<<20 - 64<<10

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
	// The servers say whether the token may restore before a byte of the
	// body is read: the agent holds the archive until it is sent on, and
	// the servers authorize again before they inflate any of it.
	if err := snaps.AuthorizeRestore(r.Context(), dc); err != nil {
		return err
	}
	archive, err := readArchiveBody(w, r)
	if err != nil {
		return err
	}
	index, err := snaps.RestoreSnapshot(r.Context(), dc, archive)
	if err != nil {
		return err
	}
	w.Header().Set("X-Consul-Index", strconv.FormatUint(index, 10))
	w.WriteHeader(http.StatusOK)
	return nil
}

// readArchiveBody reads a restore's archive, refusing one over
// MaxSnapshotBytes with a 413 before reading it when its length is told.
func readArchiveBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := &httpError{code: http.StatusRequestEntityTooLarge, body: errorBody{
		Error: "body: a snapshot archive must be at most " + strconv.Itoa(MaxSnapshotBytes) + " bytes", Field: "body",
		Reason: "a snapshot archive must be at most " + strconv.Itoa(MaxSnapshotBytes) + " bytes",
	}}
	if r.ContentLength > MaxSnapshotBytes {
		return nil, tooLarge
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxSnapshotBytes))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, tooLarge
	}
	if err != nil {
		return nil, badRequest("body", "read the snapshot archive: %v", err)
	}
	if buf.Len() == 0 {
		return nil, badRequest("body", "is empty; the snapshot archive is required")
	}
	return buf.Bytes(), nil
}
