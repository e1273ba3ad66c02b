package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/agent/httpapi"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/rpc"
)

// snapCluster is a Cluster that also answers the Snapshot methods
// through fakeDoor: it hands out archive and refuses restores of anything
// but archive.
type snapCluster struct {
	fakeCluster
	archive []byte

	refuse bool // AuthorizeRestore refuses, as the servers do a token without acl:write

	mu       sync.Mutex
	restored [][]byte
	asked    []string // "save dc stale" / "authorize dc" / "restore dc"
}

func (c *snapCluster) AuthorizeRestore(_ context.Context, dc string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, "authorize "+dc)
	if c.refuse {
		return fmt.Errorf("%w: token lacks acl:write", rpc.ErrPermissionDenied)
	}
	return nil
}

func (c *snapCluster) SaveSnapshot(_ context.Context, dc string, stale bool) ([]byte, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, "save "+dc+" "+map[bool]string{true: "stale", false: "leader"}[stale])
	return c.archive, 42, nil
}

func (c *snapCluster) RestoreSnapshot(_ context.Context, dc string, archive []byte) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, "restore "+dc)
	if !bytes.Equal(archive, c.archive) {
		// What a server answers for a damaged archive (an
		// *rpc.RemoteError unwraps to it).
		return 0, &catalog.FieldError{Field: "snapshot", Reason: "checksum mismatch for state.bin: the archive is corrupted"}
	}
	c.restored = append(c.restored, archive)
	return 77, nil
}

func TestSnapshotEndpoint(t *testing.T) {
	cl := &snapCluster{archive: []byte("\x1f\x8b archive bytes")}
	h := newClusterServer(t, cl)

	rec := serve(h, http.MethodGet, "/v1/snapshot?dc=dc2&stale", "")
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != string(cl.archive) {
		t.Errorf("got body %q, want the archive", got)
	}
	for k, want := range map[string]string{"X-Consul-Index": "42", "Content-Type": "application/gzip", "Content-Length": "16"} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("got %s %q, want %q", k, got, want)
		}
	}

	rec = serve(h, http.MethodPut, "/v1/snapshot", string(cl.archive))
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Header().Get("X-Consul-Index"); got != "77" {
		t.Errorf("restore: got X-Consul-Index %q, want 77", got)
	}

	rec = serve(h, http.MethodPut, "/v1/snapshot", "damaged")
	wantStatus(t, rec, http.StatusBadRequest)
	if body := errorBody(t, rec); body["field"] != "snapshot" || !strings.Contains(body["error"].(string), "checksum mismatch") {
		t.Errorf("damaged: got body %v, want field snapshot and the reason", body)
	}

	rec = serve(h, http.MethodPut, "/v1/snapshot", "")
	wantStatus(t, rec, http.StatusBadRequest)
	if body := errorBody(t, rec); body["field"] != "body" {
		t.Errorf("empty: got body %v, want field body", body)
	}

	rec = serve(h, http.MethodPut, "/v1/snapshot", strings.Repeat("x", 9<<20))
	wantStatus(t, rec, http.StatusRequestEntityTooLarge)
	if body := errorBody(t, rec); body["field"] != "body" || !strings.Contains(body["error"].(string), fmt.Sprintf("at most %d bytes", httpapi.MaxSnapshotBytes)) {
		t.Errorf("too big: got body %v, want field body, at most %d bytes", body, httpapi.MaxSnapshotBytes)
	}
	// Without a length told, the cap is found by reading up to it.
	req := httptest.NewRequest(http.MethodPut, "/v1/snapshot", io.MultiReader(strings.NewReader(strings.Repeat("x", 9<<20))))
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusRequestEntityTooLarge)

	rec = serve(h, http.MethodPost, "/v1/snapshot", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)
	if got := rec.Header().Get("Allow"); got != "GET, PUT" {
		t.Errorf("got Allow %q, want GET, PUT", got)
	}

	cl.mu.Lock()
	defer cl.mu.Unlock()
	if want := []string{"save dc2 stale", "authorize ", "restore ", "authorize ", "restore ", "authorize ", "authorize ", "authorize "}; strings.Join(cl.asked, "|") != strings.Join(want, "|") {
		t.Errorf("got calls %q, want %q", cl.asked, want)
	}
	if len(cl.restored) != 1 {
		t.Errorf("got %d restores, want 1", len(cl.restored))
	}
}

// countingBody is a request body that counts the bytes read from it.
type countingBody struct {
	r    io.Reader
	read int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func TestSnapshotRestoreIsAuthorizedBeforeTheBodyIsRead(t *testing.T) {
	cl := &snapCluster{archive: []byte("\x1f\x8b archive bytes"), refuse: true}
	h := newClusterServer(t, cl)
	body := &countingBody{r: strings.NewReader(string(cl.archive))}
	req := httptest.NewRequest(http.MethodPut, "/v1/snapshot?dc=dc2", body)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusForbidden)
	if body.read != 0 {
		t.Errorf("a refused restore read %d bytes of its body, want none", body.read)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if want := []string{"authorize dc2"}; strings.Join(cl.asked, "|") != strings.Join(want, "|") {
		t.Errorf("got calls %q, want %q", cl.asked, want)
	}
}
