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
	"sync/atomic"
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
// hand: tar xzf backup.snap && sha256sum -c SHA256SUMS. Reading inflates
// and decodes as it goes, verifies the sums before anything is used, and
// then checks that state.bin is a catalog consistent with meta.json; any
// failure is a *catalog.FieldError naming "snapshot", which the HTTP API
// answers with 400. Only the leader reads an archive, once the restore is
// authorized.

// The names of the files in a snapshot archive.
const (
	archiveMeta  = "meta.json"
	archiveState = "state.bin"
	archiveSums  = "SHA256SUMS"
)

// ArchiveVersion is the format version written to meta.json; an archive of
// another version is refused.
const ArchiveVersion = 1

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

// Caps on what an archive inflates to. state.bin is decoded as it is
// inflated and never held whole; meta.json and SHA256SUMS are read whole,
// and are small. After the tar's end only padding may follow.
const (
	maxArchiveState   = 512 << 20
	maxArchiveSmall   = 64 << 10
	maxArchiveTrailer = 64 << 10
)

// readArchive inflates an archive as it reads it, verifies it and decodes
// it, holding no more of it than its small files and the decoded catalog.
// inflated, when not nil, counts the bytes inflated. Every failure is a
// *catalog.FieldError naming "snapshot" with the reason.
func readArchive(r io.Reader, inflated *atomic.Uint64) (*SnapshotMeta, *catalog.Dump, error) {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, nil, badArchive("not a gzip'ed tar archive: %v", err)
	}
	counted := &countingReader{r: gz, n: inflated}
	ar := &archiveReader{tr: tar.NewReader(counted), seen: map[string]bool{}}
	metaJSON, err := ar.small(archiveMeta)
	if err != nil {
		return nil, nil, err
	}
	if err := ar.next(archiveState, maxArchiveState); err != nil {
		return nil, nil, err
	}
	// The catalog is decoded before SHA256SUMS, which follows it, can be
	// checked; nothing is applied until it is. A decode failure is told
	// only once the sums pass, so a corrupted archive is named so.
	stateSum := sha256.New()
	var d catalog.Dump
	decodeErr := codec.NewDecoder(bufio.NewReaderSize(io.TeeReader(ar.tr, stateSum), 64<<10), msgpackHandle).Decode(&d)
	if decodeErr != nil {
		decodeErr = badArchive("%s: decode catalog: %v", archiveState, decodeErr)
	}
	// What the decoder left of state.bin is hashed too (what its buffer
	// read ahead went through the hash already).
	if _, err := io.Copy(stateSum, ar.tr); err != nil {
		return nil, nil, badArchive("read %s: %v", archiveState, err)
	}
	sums, err := ar.small(archiveSums)
	if err != nil {
		return nil, nil, err
	}
	if err := ar.end(); err != nil {
		return nil, nil, err
	}
	// The gzip trailer holds a CRC of the whole stream: reading to its end
	// checks it, catching damage the tar layer would not notice.
	if n, err := io.CopyN(io.Discard, counted, maxArchiveTrailer+1); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, nil, badArchive("more than %d bytes follow the tar archive", n-1)
		}
		return nil, nil, badArchive("read archive: %v", err)
	}
	metaSum := sha256.Sum256(metaJSON)
	if err := verifySums(sums, map[string][]byte{archiveMeta: metaSum[:], archiveState: stateSum.Sum(nil)}); err != nil {
		return nil, nil, err
	}
	if decodeErr != nil {
		return nil, nil, decodeErr
	}
	meta, err := decodeMeta(metaJSON)
	if err != nil {
		return nil, nil, err
	}
	if err := checkDump(meta, &d); err != nil {
		return nil, nil, err
	}
	return meta, &d, nil
}

func decodeMeta(metaJSON []byte) (*SnapshotMeta, error) {
	var meta SnapshotMeta
	if err := json.Unmarshal(metaJSON, &meta); err != nil {
		return nil, badArchive("%s: %v", archiveMeta, err)
	}
	if meta.Version != ArchiveVersion {
		return nil, badArchive("format version %d, this server reads %d", meta.Version, ArchiveVersion)
	}
	return &meta, nil
}

// countingReader counts the bytes read through it into n (when not nil).
type countingReader struct {
	r io.Reader
	n *atomic.Uint64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n != nil {
		c.n.Add(uint64(n))
	}
	return n, err
}

// archiveReader walks an archive's tar, whose files must come in the
// order writeArchive writes them, each once.
type archiveReader struct {
	tr   *tar.Reader
	seen map[string]bool
}

// next moves to the file name, which must come next and hold at most
// limit bytes; its data is then read from ar.tr.
func (ar *archiveReader) next(name string, limit int64) error {
	hdr, err := ar.tr.Next()
	switch {
	case errors.Is(err, io.EOF):
		return badArchive("%s is missing", name)
	case err != nil:
		return badArchive("read archive: %v", err)
	case hdr.Name != name:
		return ar.misplaced(hdr.Name, name)
	case hdr.Typeflag != tar.TypeReg:
		return badArchive("%s is not a regular file", hdr.Name)
	case hdr.Size > limit:
		return badArchive("%s is %d bytes, more than the %d allowed", hdr.Name, hdr.Size, limit)
	}
	ar.seen[name] = true
	return nil
}

// misplaced is the error of a file got where want should be.
func (ar *archiveReader) misplaced(got, want string) error {
	switch {
	case ar.seen[got]:
		return badArchive("%s appears twice", got)
	case got != archiveMeta && got != archiveState && got != archiveSums:
		return badArchive("unexpected file %q in archive", got)
	}
	return badArchive("%s is missing (%s is in its place; an archive holds %s, %s and %s in this order)",
		want, got, archiveMeta, archiveState, archiveSums)
}

// small reads the file name, which must come next, whole.
func (ar *archiveReader) small(name string) ([]byte, error) {
	if err := ar.next(name, maxArchiveSmall); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(ar.tr)
	if err != nil {
		return nil, badArchive("read %s: %v", name, err)
	}
	return data, nil
}

// end checks that no file follows.
func (ar *archiveReader) end() error {
	hdr, err := ar.tr.Next()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return badArchive("read archive: %v", err)
	case ar.seen[hdr.Name]:
		return badArchive("%s appears twice", hdr.Name)
	}
	return badArchive("unexpected file %q in archive", hdr.Name)
}

// verifySums checks meta.json's and state.bin's SHA-256 (got, by name)
// against SHA256SUMS, which must list both and nothing else.
func verifySums(sums []byte, got map[string][]byte) error {
	listed := map[string]bool{}
	for line := range strings.Lines(string(sums)) {
		sum, name, ok := strings.Cut(strings.TrimRight(line, "\n"), "  ")
		if !ok || len(sum) != 2*sha256.Size {
			return badArchive("%s: malformed line %q", archiveSums, strings.TrimSpace(line))
		}
		have, known := got[name]
		if !known || listed[name] {
			return badArchive("%s: unexpected entry %q", archiveSums, name)
		}
		want, err := hex.DecodeString(sum)
		if err != nil {
			return badArchive("%s: malformed checksum for %s", archiveSums, name)
		}
		if !bytes.Equal(have, want) {
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
