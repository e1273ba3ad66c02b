package consensus

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/catalog"
	"github.com/hashicorp/raft"
)

func testDump() *catalog.Dump {
	return &catalog.Dump{
		Index: 42,
		Nodes: []*catalog.Node{
			{Node: "n1", Address: "10.0.0.1", Datacenter: "dc1", Meta: map[string]string{"rack": "r1"},
				TaggedAddresses: map[string]string{"wan": "192.0.2.1"}, RaftIndex: catalog.RaftIndex{CreateIndex: 3, ModifyIndex: 40}},
			{Node: "n2", Address: "10.0.0.2", Datacenter: "dc1", RaftIndex: catalog.RaftIndex{CreateIndex: 5, ModifyIndex: 5}},
		},
		Services: []catalog.DumpService{{Node: "n1", Service: &catalog.Service{
			ID: "web-1", Service: "web", Tags: []string{"v1"}, Port: 80, Weights: catalog.DefaultWeights,
			TaggedAddresses: map[string]catalog.ServiceAddress{"wan": {Address: "192.0.2.1", Port: 8080}},
			RaftIndex:       catalog.RaftIndex{CreateIndex: 7, ModifyIndex: 42},
		}}},
		Checks: []*catalog.Check{{Node: "n1", CheckID: "service:web-1", Name: "web", Status: catalog.HealthPassing,
			ServiceID: "web-1", ServiceName: "web", Type: "ttl", RaftIndex: catalog.RaftIndex{CreateIndex: 7, ModifyIndex: 41}}},
	}
}

func TestArchiveRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2024, 5, 6, 7, 8, 9, 500, time.UTC)
	meta, err := writeArchive(&buf, testDump(), "dc1", 3, now)
	if err != nil {
		t.Fatal(err)
	}
	files, names := untarAll(t, buf.Bytes())
	want := &SnapshotMeta{Version: ArchiveVersion, ID: fmt.Sprintf("3-42-%d", now.UnixMilli()), Index: 42, Term: 3,
		Size: int64(len(files[archiveState])), Datacenter: "dc1", Created: now.Truncate(time.Second), Nodes: 2, Services: 1, Checks: 1}
	if !reflect.DeepEqual(meta, want) {
		t.Errorf("got meta %+v, want %+v", meta, want)
	}
	// Consul's tools read these names from meta.json (a Raft snapshot's
	// meta): `consul snapshot inspect` prints them.
	var consulMeta raft.SnapshotMeta
	if err := json.Unmarshal(files[archiveMeta], &consulMeta); err != nil {
		t.Fatalf("meta.json as a Raft snapshot meta: %v", err)
	}
	if consulMeta.ID != want.ID || consulMeta.Index != 42 || consulMeta.Term != 3 || consulMeta.Size != want.Size || consulMeta.Version != 1 {
		t.Errorf("meta.json as a Raft snapshot meta: got %+v, want ID, index, term, size and version 1", consulMeta)
	}
	gotMeta, d, err := readArchive(bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatalf("readArchive: %v", err)
	}
	if !reflect.DeepEqual(gotMeta, want) {
		t.Errorf("read meta %+v, want %+v", gotMeta, want)
	}
	if !reflect.DeepEqual(d, testDump()) {
		t.Errorf("read dump %s, want %s", dumpString(d), dumpString(testDump()))
	}
	// The files are in sha256sum's format, in a fixed order.
	if want := []string{archiveMeta, archiveState, archiveSums}; !reflect.DeepEqual(names, want) {
		t.Errorf("got files %v, want %v", names, want)
	}
	sum := sha256.Sum256(files[archiveState])
	if line := hex.EncodeToString(sum[:]) + "  " + archiveState + "\n"; !strings.Contains(string(files[archiveSums]), line) {
		t.Errorf("SHA256SUMS %q lacks %q", files[archiveSums], line)
	}
}

func dumpString(d *catalog.Dump) string {
	var b strings.Builder
	fmt.Fprintf(&b, "index %d", d.Index)
	for _, n := range d.Nodes {
		fmt.Fprintf(&b, " node%+v", *n)
	}
	for _, s := range d.Services {
		fmt.Fprintf(&b, " svc %s%+v", s.Node, *s.Service)
	}
	for _, c := range d.Checks {
		fmt.Fprintf(&b, " check%+v", *c)
	}
	return b.String()
}

// untarAll returns the files of an archive and their names in order.
func untarAll(t *testing.T, archive []byte) (map[string][]byte, []string) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	var names []string
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		var b bytes.Buffer
		if _, err := b.ReadFrom(tr); err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b.Bytes()
		names = append(names, hdr.Name)
	}
	return files, names
}

type archiveFile struct {
	name string
	data []byte
}

// tarGz builds an archive from files as given, without any checking.
func tarGz(t *testing.T, files ...archiveFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// sums is a SHA256SUMS listing files.
func sums(files ...archiveFile) archiveFile {
	var b strings.Builder
	for _, f := range files {
		s := sha256.Sum256(f.data)
		fmt.Fprintf(&b, "%x  %s\n", s, f.name)
	}
	return archiveFile{archiveSums, []byte(b.String())}
}

func TestArchiveRefusesDamage(t *testing.T) {
	var good bytes.Buffer
	if _, err := writeArchive(&good, testDump(), "dc1", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	files, _ := untarAll(t, good.Bytes())
	meta := archiveFile{archiveMeta, files[archiveMeta]}
	state := archiveFile{archiveState, files[archiveState]}
	tampered := archiveFile{archiveState, append(bytes.Clone(state.data[:len(state.data)-1]), state.data[len(state.data)-1]^1)}
	metaV2 := archiveFile{archiveMeta, bytes.Replace(meta.data, []byte(`"Version": 1`), []byte(`"Version": 2`), 1)}
	metaCount := archiveFile{archiveMeta, bytes.Replace(meta.data, []byte(`"Nodes": 2`), []byte(`"Nodes": 3`), 1)}
	orphan := testDump()
	orphan.Services[0].Node = "n9"
	var orphanBuf bytes.Buffer
	if _, err := writeArchive(&orphanBuf, orphan, "dc1", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good.Bytes())
	flipped[len(flipped)/2] ^= 0x40

	for _, tc := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"empty", nil, "not a gzip'ed tar archive"},
		{"not gzip", []byte("hello, world"), "not a gzip'ed tar archive"},
		{"flipped byte", flipped, ""},
		{"truncated", good.Bytes()[:good.Len()-10], ""},
		{"state changed, sums kept", tarGz(t, meta, tampered, sums(meta, state)), "checksum mismatch for state.bin"},
		{"meta changed, sums kept", tarGz(t, metaV2, state, sums(meta, state)), "checksum mismatch for meta.json"},
		{"no sums", tarGz(t, meta, state), "SHA256SUMS is missing"},
		{"no state", tarGz(t, meta, sums(meta)), "state.bin is missing"},
		{"state not listed", tarGz(t, meta, state, sums(meta)), "does not list state.bin"},
		{"extra file", tarGz(t, meta, state, archiveFile{"evil.sh", []byte("x")}, sums(meta, state)), `unexpected file "evil.sh"`},
		{"file twice", tarGz(t, meta, state, state, sums(meta, state)), "state.bin appears twice"},
		{"malformed sums", tarGz(t, meta, state, archiveFile{archiveSums, []byte("abc state.bin\n")}), "malformed line"},
		{"other version", tarGz(t, metaV2, state, sums(metaV2, state)), "format version 2"},
		{"counts differ", tarGz(t, metaCount, state, sums(metaCount, state)), "holds 2 nodes"},
		{"garbage state", tarGz(t, meta, archiveFile{archiveState, []byte{0xc1}}, sums(meta, archiveFile{archiveState, []byte{0xc1}})), "decode catalog"},
		{"service without node", orphanBuf.Bytes(), `service "web-1" is on node "n9"`},
		{"out of order", tarGz(t, state, meta, sums(meta, state)), "meta.json is missing (state.bin is in its place"},
		{"meta too big", tarGz(t, archiveFile{archiveMeta, make([]byte, maxArchiveSmall+1)}, state), "meta.json is 65537 bytes, more than the 65536 allowed"},
	} {
		_, _, err := readArchive(bytes.NewReader(tc.archive), nil)
		var fe *catalog.FieldError
		if !errors.As(err, &fe) || fe.Field != "snapshot" {
			t.Errorf("%s: got error %v, want a FieldError naming snapshot", tc.name, err)
			continue
		}
		if !strings.Contains(fe.Reason, tc.want) {
			t.Errorf("%s: got reason %q, want it to contain %q", tc.name, fe.Reason, tc.want)
		}
	}
}
