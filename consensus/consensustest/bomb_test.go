package consensustest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/cairndns/cairn/consensus/consensustest"
)

// TestArchiveBombInflatesAsTold reads a bomb of 8 MiB: a gzip'ed tar whose
// CRC holds, of meta.json, 8 MiB of zeros in state.bin, and SHA256SUMS.
func TestArchiveBombInflatesAsTold(t *testing.T) {
	bomb := consensustest.ArchiveBomb(t, 8<<20)
	gz, err := gzip.NewReader(bytes.NewReader(bomb))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == "state.bin" && (len(data) != 8<<20 || bytes.IndexFunc(data, func(r rune) bool { return r != 0 }) >= 0) {
			t.Errorf("state.bin holds %d bytes, want 8 MiB of zeros", len(data))
		}
	}
	if _, err := io.Copy(io.Discard, gz); err != nil { // checks the CRC and size
		t.Fatalf("gzip trailer: %v", err)
	}
	if got := []string{"meta.json", "state.bin", "SHA256SUMS"}; len(names) != 3 || names[0] != got[0] || names[1] != got[1] || names[2] != got[2] {
		t.Errorf("got files %v, want %v", names, got)
	}
	t.Logf("%d bytes inflate to 8 MiB", len(bomb))
}
