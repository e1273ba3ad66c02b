package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cairndns/cairn/rpc"
)

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
	dc := r.URL.Query().Get("dc")
	if r.Method == http.MethodGet {
		// The leader saves it, or with ?stale any server.
		var reply rpc.SnapshotSaveResponse
		args := &rpc.SnapshotSaveRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: boolParam(r, "stale")}}
		if err := s.door.RPC(r.Context(), rpc.MethodSnapshotSave, args, &reply); err != nil {
			return fmt.Errorf("save snapshot: %w", err)
		}
		w.Header().Set("Content-Type", SnapshotContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(reply.Archive)))
		setMetaHeaders(w, reply.QueryMeta) // X-Consul-KnownLeader and the rest, as Consul's
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(reply.Archive)
		return nil
	}
	// The servers say whether the token may restore before a byte of the
	// body is read, whatever the agent's own ACL configuration says: the
	// agent holds the archive until it is sent on, and the servers
	// authorize again before they inflate any of it.
	authz := &rpc.SnapshotAuthorizeRequest{QueryOptions: rpc.QueryOptions{Datacenter: dc, AllowStale: true}}
	if err := s.door.RPC(r.Context(), rpc.MethodSnapshotAuthorize, authz, &struct{}{}); err != nil {
		return fmt.Errorf("authorize snapshot restore: %w", err)
	}
	archive, err := readArchiveBody(w, r)
	if err != nil {
		return err
	}
	// Restored into every server; an archive that fails verification is
	// a *catalog.FieldError naming "snapshot", and nothing changed.
	var reply rpc.SnapshotRestoreResponse
	args := &rpc.SnapshotRestoreRequest{WriteRequest: rpc.WriteRequest{Datacenter: dc}, Archive: archive}
	if err := s.door.RPC(r.Context(), rpc.MethodSnapshotRestore, args, &reply); err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	w.Header().Set("X-Consul-Index", strconv.FormatUint(reply.Index, 10))
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
