package consensus

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// This file holds the snapshot archive: what GET /v1/snapshot saves and
// PUT /v1/snapshot restores. It is a gzip'ed tar of three files, in this
// order:
//
//	meta.json    SnapshotMeta as JSON: format version, index, datacenter, time, counts
//	state.bin    the catalog as a Raft snapshot holds it (a msgpack catalog.Dump)
//	SHA256SUMS   "<hex sha256>  <name>" for meta.json and state.bin
//
// SHA256SUMS is in sha256sum's format, so an archive can be checked by
// hand: tar xzf backup.snap && sha256sum -c SHA256SUMS. Reading verifies
// it before anything is decoded, and then checks that state.bin is a
// catalog consistent with meta.json; any failure is a *catalog.FieldError
// naming "snapshot", which the HTTP API answers with 400.

// The names of the files in a snapshot archive.
const (
	archiveMeta  = "meta.json"
	archiveState = "state.bin"
	archiveSums  = "SHA256SUMS"
)

// ArchiveVersion is the format version written to meta.json; an archive of
// another version is refused.
const ArchiveVersion = 1

// maxArchiveFile caps one file of an archive once decompressed, so that a
// small crafted archive cannot make a server inflate gigabytes.
const maxArchiveFile = 512 << 20

// SnapshotMeta describes an archive; it is its meta.json. Version, ID,
// Index, Term and Size are named as in Consul's meta.json (a Raft
// snapshot's meta), so that `consul snapshot inspect` shows them.
type SnapshotMeta struct {
	Version int    // ArchiveVersion
	ID      string // "<term>-<index>-<unix ms>", as Raft names its snapshots
	Index   uint64 // the catalog's index when it was saved
	Term    uint64 // the Raft term of the server that saved it
	Size    int64  // the bytes of state.bin
	// The rest is cairn's.
	Datacenter string    // the datacenter it was saved from
	Created    time.Time // when it was saved, UTC
	Nodes      int
	Services   int
	Checks     int
}

// writeArchive writes d, saved in Raft term term, as an archive to w.
func writeArchive(w io.Writer, d *catalog.Dump, dc string, term uint64, now time.Time) (*SnapshotMeta, error) {
	var state bytes.Buffer
	if err := codec.NewEncoder(&state, msgpackHandle).Encode(d); err != nil {
		return nil, fmt.Errorf("encode catalog: %w", err)
	}
	meta := &SnapshotMeta{
		Version: ArchiveVersion, ID: fmt.Sprintf("%d-%d-%d", term, d.Index, now.UnixMilli()),
		Index: d.Index, Term: term, Size: int64(state.Len()),
		Datacenter: dc, Created: now.UTC().Truncate(time.Second),
		Nodes: len(d.Nodes), Services: len(d.Services), Checks: len(d.Checks),
	}
	metaJSON, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode snapshot meta: %w", err)
	}
	var sums strings.Builder
	for _, f := range []struct {
		name string
		data []byte
	}{{archiveMeta, metaJSON}, {archiveState, state.Bytes()}} {
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), f.name)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
	}{{archiveMeta, metaJSON}, {archiveState, state.Bytes()}, {archiveSums, []byte(sums.String())}} {
		hdr := &tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.data)), ModTime: meta.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("write snapshot archive: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("write snapshot archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write snapshot archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("write snapshot archive: %w", err)
	}
	return meta, nil
}

// badArchive is the error of an archive that cannot be restored.
func badArchive(format string, args ...any) error {
	return &catalog.FieldError{Field: "snapshot", Reason: fmt.Sprintf(format, args...)}
}

// checkArchive verifies an archive's framing, checksums and meta without
// decoding the catalog, which readArchive does: enough to refuse a
// corrupted archive, at a fraction of the cost (decoding 100,000
// instances with their checks takes seconds). Failures are as
// readArchive's.
func checkArchive(r io.Reader) error {
	files, err := untar(r)
	if err != nil {
		return err
	}
	if err := verifySums(files); err != nil {
		return err
	}
	_, err = decodeMeta(files)
	return err
}

func decodeMeta(files map[string][]byte) (*SnapshotMeta, error) {
	var meta SnapshotMeta
	if err := json.Unmarshal(files[archiveMeta], &meta); err != nil {
		return nil, badArchive("%s: %v", archiveMeta, err)
	}
	if meta.Version != ArchiveVersion {
		return nil, badArchive("format version %d, this server reads %d", meta.Version, ArchiveVersion)
	}
	return &meta, nil
}

// readArchive verifies an archive and decodes it. Every failure is a
// *catalog.FieldError naming "snapshot" with the reason.
func readArchive(r io.Reader) (*SnapshotMeta, *catalog.Dump, error) {
	files, err := untar(r)
	if err != nil {
		return nil, nil, err
	}
	if err := verifySums(files); err != nil {
		return nil, nil, err
	}
	meta, err := decodeMeta(files)
	if err != nil {
		return nil, nil, err
	}
	var d catalog.Dump
	if err := codec.NewDecoderBytes(files[archiveState], msgpackHandle).Decode(&d); err != nil {
		return nil, nil, badArchive("%s: decode catalog: %v", archiveState, err)
	}
	if err := checkDump(meta, &d); err != nil {
		return nil, nil, err
	}
	return meta, &d, nil
}

// untar reads the archive's three files, refusing anything else in it.
func untar(r io.Reader) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, badArchive("not a gzip'ed tar archive: %v", err)
	}
	tr := tar.NewReader(gz)
	files := make(map[string][]byte, 3)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badArchive("read archive: %v", err)
		}
		switch {
		case hdr.Name != archiveMeta && hdr.Name != archiveState && hdr.Name != archiveSums:
			return nil, badArchive("unexpected file %q in archive", hdr.Name)
		case hdr.Typeflag != tar.TypeReg:
			return nil, badArchive("%s is not a regular file", hdr.Name)
		case files[hdr.Name] != nil:
			return nil, badArchive("%s appears twice", hdr.Name)
		case hdr.Size > maxArchiveFile:
			return nil, badArchive("%s is %d bytes, more than the %d allowed", hdr.Name, hdr.Size, maxArchiveFile)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, badArchive("read %s: %v", hdr.Name, err)
		}
		files[hdr.Name] = data
	}
	// The gzip trailer holds a CRC of the whole stream: reading to its end
	// checks it, catching damage the tar layer would not notice.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, badArchive("read archive: %v", err)
	}
	for _, name := range []string{archiveMeta, archiveState, archiveSums} {
		if files[name] == nil {
			return nil, badArchive("%s is missing", name)
		}
	}
	return files, nil
}

// verifySums checks meta.json and state.bin against SHA256SUMS, which must
// list both and nothing else.
func verifySums(files map[string][]byte) error {
	listed := map[string]bool{}
	for line := range strings.Lines(string(files[archiveSums])) {
		sum, name, ok := strings.Cut(strings.TrimRight(line, "\n"), "  ")
		if !ok || len(sum) != 2*sha256.Size {
			return badArchive("%s: malformed line %q", archiveSums, strings.TrimSpace(line))
		}
		data, known := files[name]
		if !known || name == archiveSums || listed[name] {
			return badArchive("%s: unexpected entry %q", archiveSums, name)
		}
		want, err := hex.DecodeString(sum)
		if err != nil {
			return badArchive("%s: malformed checksum for %s", archiveSums, name)
		}
		if got := sha256.Sum256(data); !bytes.Equal(got[:], want) {
			return badArchive("checksum mismatch for %s: the archive is corrupted", name)
		}
		listed[name] = true
	}
	for _, name := range []string{archiveMeta, archiveState} {
		if !listed[name] {
			return badArchive("%s does not list %s", archiveSums, name)
		}
	}
	return nil
}

// checkDump refuses a catalog that Store.Restore could not load or that
// would leave services and checks without their node, and one that does
// not match its meta.
func checkDump(meta *SnapshotMeta, d *catalog.Dump) error {
	if meta.Nodes != len(d.Nodes) || meta.Services != len(d.Services) || meta.Checks != len(d.Checks) {
		return badArchive("%s holds %d nodes, %d services and %d checks; %s says %d, %d and %d",
			archiveState, len(d.Nodes), len(d.Services), len(d.Checks), archiveMeta, meta.Nodes, meta.Services, meta.Checks)
	}
	if meta.Index != d.Index {
		return badArchive("%s is at index %d; %s says %d", archiveState, d.Index, archiveMeta, meta.Index)
	}
	nodes := make(map[string]bool, len(d.Nodes))
	for i, n := range d.Nodes {
		if n == nil {
			return badArchive("node %d is empty", i)
		}
		if err := catalog.ValidateNodeName("Node", n.Node); err != nil {
			return badArchive("node %d: %v", i, err)
		}
		nodes[strings.ToLower(n.Node)] = true
	}
	for i, s := range d.Services {
		if s.Service == nil || s.Service.ID == "" {
			return badArchive("service %d is empty", i)
		}
		if !nodes[strings.ToLower(s.Node)] {
			return badArchive("service %q is on node %q, which is not in the snapshot", s.Service.ID, s.Node)
		}
	}
	for i, c := range d.Checks {
		if c == nil || c.CheckID == "" {
			return badArchive("check %d is empty", i)
		}
		if !nodes[strings.ToLower(c.Node)] {
			return badArchive("check %q is on node %q, which is not in the snapshot", c.CheckID, c.Node)
		}
	}
	for i, e := range d.KVs {
		if e == nil || e.Key == "" {
			return badArchive("key %d is empty", i)
		}
	}
	return nil
}

// VerifyArchive checks an archive as a restore would, without restoring
// it, and returns its meta. A bad archive is a *catalog.FieldError naming
// "snapshot".
func VerifyArchive(r io.Reader) (*SnapshotMeta, error) {
	meta, _, err := readArchive(r)
	return meta, err
}
