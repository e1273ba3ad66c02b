package consensustest

import (
	"archive/tar"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
)

// bombChunk is the run of zeros one repeated deflate block inflates to.
const bombChunk = 1 << 20

// ArchiveBomb returns a snapshot archive as an attacker crafts it: a small
// gzip'ed tar whose meta.json is a valid one and whose state.bin is
// inflate bytes of zeros (rounded up to a MiB; 400 MiB is about 410 KB),
// followed by a SHA256SUMS that lists nothing right. A server that
// inflates it before checking who sent it spends inflate bytes of memory
// or CPU on it.
//
// It is built without compressing the zeros more than twice: once the
// window holds only zeros, the deflate block of a MiB of zeros reads the
// same wherever it is put, so it is repeated. (Compressing 400 MiB took over a
// minute under the race detector.)
func ArchiveBomb(t testing.TB, inflate int64) []byte {
	t.Helper()
	chunks := max((inflate+bombChunk-1)/bombChunk, 2)
	size := chunks * bombChunk

	// The tar around state.bin's zeros: what comes before them, and
	// after (size is a multiple of the 512-byte block: no padding).
	var head, tail bytes.Buffer
	tw := tar.NewWriter(&head)
	meta := []byte(`{"Version": 1, "Index": 1, "Datacenter": "dc1"}`)
	writeFile(t, tw, "meta.json", meta)
	if err := tw.WriteHeader(&tar.Header{Name: "state.bin", Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw = tar.NewWriter(&tail)
	writeFile(t, tw, "SHA256SUMS", fmt.Appendf(nil, "%064x  meta.json\n%064x  state.bin\n", 0, 0))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	// The gzip stream as its writer makes it for two chunks of zeros,
	// cut where each chunk ends: the second chunk's block is put in
	// chunks-1 times.
	var out bytes.Buffer
	gz, err := gzip.NewWriterLevel(&out, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, bombChunk)
	write := func(p []byte) {
		if _, err := gz.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	flush := func() []byte {
		if err := gz.Flush(); err != nil {
			t.Fatal(err)
		}
		b := bytes.Clone(out.Bytes())
		out.Reset()
		return b
	}
	write(head.Bytes())
	write(zeros)
	first := flush()
	write(zeros)
	block := flush()
	write(tail.Bytes())
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	last := out.Bytes()

	bomb := bytes.NewBuffer(first)
	for range chunks - 1 {
		bomb.Write(block)
	}
	bomb.Write(last[:len(last)-8])
	// The trailer is of what the archive inflates to, not of what the
	// writer saw.
	crc := crc32.Update(0, crc32.IEEETable, head.Bytes())
	for range chunks {
		crc = crc32.Update(crc, crc32.IEEETable, zeros)
	}
	crc = crc32.Update(crc, crc32.IEEETable, tail.Bytes())
	total := int64(head.Len()) + size + int64(tail.Len())
	bomb.Write(binary.LittleEndian.AppendUint32(nil, crc))
	bomb.Write(binary.LittleEndian.AppendUint32(nil, uint32(total)))
	return bomb.Bytes()
}

func writeFile(t testing.TB, tw *tar.Writer, name string, data []byte) {
	t.Helper()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
}
