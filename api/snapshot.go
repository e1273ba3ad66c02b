package api

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Snapshot is the /v1/snapshot endpoint: a point-in-time archive of the
// datacenter's catalog, saved from and restored into its servers.
//
// The archive is a gzip'ed tar of three files: meta.json (SnapshotMeta),
// state.bin (the catalog, in the servers' own encoding) and SHA256SUMS
// (sha256sum's format, listing the other two), so that
// "tar xzf backup.snap && sha256sum -c SHA256SUMS" checks one by hand.
type Snapshot struct{ c *Client }

// Snapshot returns the snapshot endpoint (/v1/snapshot).
func (c *Client) Snapshot() *Snapshot { return &Snapshot{c: c} }

// SnapshotMeta is an archive's meta.json.
type SnapshotMeta struct {
	// Version is the archive format's version.
	Version int
	// ID names the archive: "<term>-<index>-<unix ms>".
	ID string
	// Index is the catalog's index when the archive was saved.
	Index uint64
	// Term is the Raft term of the server that saved it.
	Term uint64
	// Size is the bytes of the archive's state.bin.
	Size int64
	// Datacenter is the datacenter it was saved from.
	Datacenter string
	// Created is when it was saved.
	Created time.Time
	// Nodes, Services and Checks count what the archive holds.
	Nodes    int
	Services int
	Checks   int
}

// Save asks the leader for an archive of the catalog (GET /v1/snapshot)
// and returns it as a stream, which the caller must close, with the index
// it was saved at. Check a saved archive with VerifySnapshot.
func (s *Snapshot) Save(ctx context.Context) (io.ReadCloser, *QueryMeta, error) {
	const path = "/v1/snapshot"
	req, err := s.c.newRequest(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/gzip, application/json")
	resp, err := s.c.send(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	meta, err := parseQueryMeta(resp.Header)
	if err != nil {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return resp.Body, meta, nil
}

// Restore sends an archive to be restored into every server of the
// datacenter (PUT /v1/snapshot), replacing the catalog. The servers verify
// it first: a corrupted archive is refused with a *StatusError (400, Field
// "snapshot") and nothing changes.
func (s *Snapshot) Restore(ctx context.Context, archive io.Reader) error {
	const path = "/v1/snapshot"
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.c.base.String()+path, archive)
	if err != nil {
		return fmt.Errorf("PUT %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := s.c.send(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	return nil
}

// send sends req and returns a 2xx response with its body open; any other
// status is read into a *StatusError, and no answer at all is an
// *UnreachableError.
func (c *Client) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); errors.Is(ctxErr, context.Canceled) {
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, ctxErr)
		}
		return nil, &UnreachableError{Address: c.Address(), Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read response: %w", req.Method, req.URL.Path, err)
	}
	return nil, decodeStatusError(resp.StatusCode, body)
}

// maxSnapshotFile caps one file of an archive VerifySnapshot reads, once
// decompressed.
const maxSnapshotFile = 512 << 20

// VerifySnapshot checks an archive without sending it anywhere: that it is
// a gzip'ed tar holding meta.json, state.bin and SHA256SUMS, and that the
// checksums match. It returns the archive's meta. The servers check the
// same (and decode the catalog) before a restore.
func VerifySnapshot(r io.Reader) (*SnapshotMeta, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a snapshot archive (gzip'ed tar): %w", err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read snapshot archive: %w", err)
		}
		if files[hdr.Name] != nil || hdr.Size > maxSnapshotFile {
			return nil, fmt.Errorf("snapshot archive: %s appears twice or is too large", hdr.Name)
		}
		if files[hdr.Name], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("read %s of the snapshot archive: %w", hdr.Name, err)
		}
	}
	if _, err := io.Copy(io.Discard, gz); err != nil { // checks the gzip CRC
		return nil, fmt.Errorf("read snapshot archive: %w", err)
	}
	for _, name := range []string{"meta.json", "state.bin", "SHA256SUMS"} {
		if files[name] == nil {
			return nil, fmt.Errorf("snapshot archive: %s is missing", name)
		}
	}
	checked := map[string]bool{}
	for line := range strings.Lines(string(files["SHA256SUMS"])) {
		sum, name, ok := strings.Cut(strings.TrimRight(line, "\n"), "  ")
		want, err := hex.DecodeString(sum)
		data, known := files[name]
		if !ok || err != nil || !known || name == "SHA256SUMS" || checked[name] {
			return nil, fmt.Errorf("snapshot archive: SHA256SUMS: malformed line %q", strings.TrimSpace(line))
		}
		if got := sha256.Sum256(data); !bytes.Equal(got[:], want) {
			return nil, fmt.Errorf("snapshot archive: checksum mismatch for %s: the archive is corrupted", name)
		}
		checked[name] = true
	}
	if len(checked) != len(files)-1 {
		return nil, fmt.Errorf("snapshot archive: SHA256SUMS lists %d of its %d other files", len(checked), len(files)-1)
	}
	var meta SnapshotMeta
	if err := json.Unmarshal(files["meta.json"], &meta); err != nil {
		return nil, fmt.Errorf("snapshot archive: meta.json: %w", err)
	}
	return &meta, nil
}
