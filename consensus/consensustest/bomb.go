package consensustest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"
)

// ArchiveBomb returns a snapshot archive as an attacker crafts it: a small
// gzip'ed tar whose meta.json is a valid one and whose state.bin is
// inflate bytes of zeros (a 320 MiB one is about 400 KB), followed by a
// SHA256SUMS that lists nothing right. A server that inflates it before
// checking who sent it spends inflate bytes of memory or CPU on it.
func ArchiveBomb(t testing.TB, inflate int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	file := func(name string, size int64, data io.Reader) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, data); err != nil {
			t.Fatal(err)
		}
	}
	meta := []byte(`{"Version": 1, "Index": 1, "Datacenter": "dc1"}`)
	file("meta.json", int64(len(meta)), bytes.NewReader(meta))
	file("state.bin", inflate, io.LimitReader(zeros{}, inflate))
	sums := fmt.Appendf(nil, "%064x  meta.json\n%064x  state.bin\n", 0, 0)
	file("SHA256SUMS", int64(len(sums)), bytes.NewReader(sums))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
