package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/api"
)

// archive builds a snapshot archive of files (name, content pairs) in
// order, with SHA256SUMS listing those in sums.
func archive(t *testing.T, files [][2]string, sums ...string) []byte {
	t.Helper()
	var list strings.Builder
	for _, f := range files {
		for _, s := range sums {
			if s == f[0] {
				fmt.Fprintf(&list, "%x  %s\n", sha256.Sum256([]byte(f[1])), f[0])
			}
		}
	}
	files = append(files, [2]string{"SHA256SUMS", list.String()})
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o600, Size: int64(len(f[1])), Typeflag: tar.TypeReg})
		io.WriteString(tw, f[1])
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

const metaJSON = `{"Version": 1, "Index": 42, "Datacenter": "dc1", "Created": "2024-05-06T07:08:09Z", "Nodes": 2, "Services": 3, "Checks": 4}`

func TestVerifySnapshot(t *testing.T) {
	files := [][2]string{{"meta.json", metaJSON}, {"state.bin", "catalog"}}
	meta, err := api.VerifySnapshot(bytes.NewReader(archive(t, files, "meta.json", "state.bin")))
	if err != nil {
		t.Fatalf("VerifySnapshot: %v", err)
	}
	want := api.SnapshotMeta{Version: 1, Index: 42, Datacenter: "dc1", Created: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), Nodes: 2, Services: 3, Checks: 4}
	if *meta != want {
		t.Errorf("got %+v, want %+v", *meta, want)
	}
	good := archive(t, files, "meta.json", "state.bin")
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"not gzip":     {[]byte("plain"), "not a snapshot archive"},
		"flipped":      {flipped, ""},
		"not listed":   {archive(t, files, "meta.json"), "lists 1 of its 2"},
		"missing file": {archive(t, files[:1], "meta.json"), "state.bin is missing"},
		"tampered": {archive(t, [][2]string{{"meta.json", metaJSON}, {"state.bin", "catalog"}, {"state.bin.orig", "x"}}, "meta.json", "state.bin"),
			"lists 2 of its 3"},
	} {
		if _, err := api.VerifySnapshot(bytes.NewReader(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}

func TestSnapshotSave(t *testing.T) {
	c, seen := fakeAgent(t, reply{Header: map[string]string{"X-Consul-Index": "42", "Content-Type": "application/gzip"}, Body: "archive"})
	rc, meta, err := c.Snapshot().Save(context.Background())
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	defer rc.Close()
	body, _ := io.ReadAll(rc)
	if string(body) != "archive" || meta.LastIndex != 42 {
		t.Errorf("got %q at index %d, want the archive at 42", body, meta.LastIndex)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/snapshot", "")
}

func TestSnapshotRestore(t *testing.T) {
	c, seen := fakeAgent(t, reply{})
	if err := c.Snapshot().Restore(context.Background(), strings.NewReader("archive")); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	got := only(t, seen)
	checkRequest(t, got, "PUT", "/v1/snapshot", "")
	if string(got.Body) != "archive" || got.ContentType != "application/gzip" {
		t.Errorf("sent %q as %q, want the archive as application/gzip", got.Body, got.ContentType)
	}

	c, _ = fakeAgent(t, reply{Status: 400, Body: `{"error": "snapshot: checksum mismatch for state.bin", "field": "snapshot", "reason": "checksum mismatch for state.bin"}`})
	err := c.Snapshot().Restore(context.Background(), strings.NewReader("damaged"))
	var se *api.StatusError
	if !errors.As(err, &se) || se.Code != 400 || se.Field != "snapshot" {
		t.Errorf("got %v, want a 400 naming snapshot", err)
	}
}

func TestBlockingGet(t *testing.T) {
	c, seen := fakeAgent(t, reply{Header: map[string]string{"X-Consul-Index": "9"}, Body: `[{"Node": "n1"}]`})
	body, meta, err := c.BlockingGet(context.Background(), "/v1/catalog/nodes", nil, 7, 90*time.Second)
	if err != nil {
		t.Fatalf("BlockingGet: %v", err)
	}
	if string(body) != `[{"Node": "n1"}]` || meta.LastIndex != 9 {
		t.Errorf("got %s at %d", body, meta.LastIndex)
	}
	checkRequest(t, only(t, seen), "GET", "/v1/catalog/nodes", "index=7&wait=90000ms")
}
