package gossip

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }

func TestNextKeys(t *testing.T) {
	a, b, c := key('a'), key('b'), key('c')
	full := make([][]byte, MaxKeys)
	for i := range full {
		full[i] = key(byte('k' + i))
	}
	for _, tc := range []struct {
		name    string
		keys    [][]byte
		op      keyOp
		key     []byte
		want    [][]byte
		changed bool
		err     error
	}{
		{"install new", [][]byte{a}, opInstall, b, [][]byte{a, b}, true, nil},
		{"install held", [][]byte{a, b}, opInstall, b, [][]byte{a, b}, false, nil},
		{"install into full", full, opInstall, a, full, false, ErrKeyringFull},
		{"use held", [][]byte{a, b, c}, opUse, c, [][]byte{c, a, b}, true, nil},
		{"use primary", [][]byte{a, b}, opUse, a, [][]byte{a, b}, false, nil},
		{"use missing", [][]byte{a}, opUse, b, [][]byte{a}, false, ErrKeyNotInstalled},
		{"remove middle", [][]byte{a, b, c}, opRemove, b, [][]byte{a, c}, true, nil},
		{"remove missing", [][]byte{a}, opRemove, b, [][]byte{a}, false, nil},
		{"remove primary", [][]byte{a, b}, opRemove, a, [][]byte{a, b}, false, ErrPrimaryKey},
	} {
		before := slices.Clone(tc.keys)
		got, changed, err := nextKeys(tc.keys, tc.op, tc.key)
		if !errors.Is(err, tc.err) || changed != tc.changed || !slices.EqualFunc(got, tc.want, bytes.Equal) {
			t.Errorf("%s: got %q, %v, %v; want %q, %v, %v", tc.name, got, changed, err, tc.want, tc.changed, tc.err)
		}
		if !slices.EqualFunc(tc.keys, before, bytes.Equal) {
			t.Errorf("%s: the keys passed in changed to %q", tc.name, tc.keys)
		}
	}
}

// TestRemoveKeyKeepsOrder: removing a key from the middle of memberlist's
// keyring leaves the others in order, without rewriting the slice
// GetKeys handed out before.
func TestRemoveKeyKeepsOrder(t *testing.T) {
	a, b, c, d := key('a'), key('b'), key('c'), key('d')
	kr, err := memberlist.NewKeyring([][]byte{b, c, d}, a)
	if err != nil {
		t.Fatal(err)
	}
	handedOut := kr.GetKeys()
	snapshot := slices.Clone(handedOut)
	if err := removeKey(kr, b); err != nil {
		t.Fatal(err)
	}
	if got, want := kr.GetKeys(), [][]byte{a, c, d}; !slices.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("after removing b: %q, want %q", got, want)
	}
	if !slices.EqualFunc(handedOut, snapshot, bytes.Equal) {
		t.Errorf("the slice handed out before changed to %q, want %q", handedOut, snapshot)
	}
}

func TestKeyringFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gossip", "lan.keyring")
	keys := [][]byte{key('a'), bytes.Repeat([]byte{'b'}, 32)}
	if err := writeKeyringFile(path, keys); err != nil {
		t.Fatal(err)
	}
	got, err := readKeyringFile(path)
	if err != nil || !slices.EqualFunc(got, keys, bytes.Equal) {
		t.Errorf("read back %q, %v; want %q", got, err, keys)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("keyring file mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("keyring directory holds %d files, want only the keyring (no temporary left)", len(entries))
	}
	b, _ := os.ReadFile(path)
	if want := `["YWFhYWFhYWFhYWFhYWFhYQ==","YmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmI="]`; string(b) != want {
		t.Errorf("keyring file is %s, want Consul's format %s", b, want)
	}

	if _, err := readKeyringFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v, want fs.ErrNotExist", err)
	}
	nine := `["` + strings.Repeat(`YWFhYWFhYWFhYWFhYWFhYQ==","`, 8) + `YWFhYWFhYWFhYWFhYWFhYQ=="]`
	for _, tc := range []struct{ content, want string }{
		{`{"keys":[]}`, "not a JSON list"},
		{`[]`, "holds no key"},
		{`["not base64!"]`, "key 0"},
		{`["MDEyMzQ1Njc4OQ=="]`, "10 bytes"},
		{`["YWFhYWFhYWFhYWFhYWFhYQ==","YWFhYWFhYWFhYWFhYWFhYQ=="]`, "key 1 is there twice"},
		{nine, "more than 8"},
	} {
		bad := filepath.Join(dir, "bad.keyring")
		if err := os.WriteFile(bad, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readKeyringFile(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("keyring %s: got %v, want an error mentioning %q", tc.content, err, tc.want)
		}
	}
}

func TestInitialKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{EncryptKey: key('a'), KeyringFile: filepath.Join(dir, "lan.keyring")}

	// No file yet: seeded from EncryptKey, and written.
	keys, note, err := initialKeys(cfg)
	if err != nil || note != "" || !slices.EqualFunc(keys, [][]byte{key('a')}, bytes.Equal) {
		t.Fatalf("first start: %q, %q, %v; want the encrypt key", keys, note, err)
	}
	if onDisk, err := readKeyringFile(cfg.KeyringFile); err != nil || len(onDisk) != 1 {
		t.Errorf("seeded file holds %q, %v", onDisk, err)
	}

	// The file wins over EncryptKey.
	if err := writeKeyringFile(cfg.KeyringFile, [][]byte{key('b'), key('c')}); err != nil {
		t.Fatal(err)
	}
	keys, note, err = initialKeys(cfg)
	if err != nil || note == "" || !slices.EqualFunc(keys, [][]byte{key('b'), key('c')}, bytes.Equal) {
		t.Errorf("restart: %q, %q, %v; want the file's keys and a note", keys, note, err)
	}

	// No key, no file: no encryption; a file alone turns it on.
	if keys, _, err := initialKeys(Config{KeyringFile: filepath.Join(dir, "wan.keyring")}); err != nil || keys != nil {
		t.Errorf("no key, no file: %q, %v; want none", keys, err)
	}
	if keys, _, err := initialKeys(Config{KeyringFile: cfg.KeyringFile}); err != nil || len(keys) != 2 {
		t.Errorf("file without EncryptKey: %q, %v; want its 2 keys", keys, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wan.keyring")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was written without a key: %v", err)
	}
}

func TestMetaKeys(t *testing.T) {
	m := meta{Role: RoleServer, Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1,
		Keys: fingerprintsOf([][]byte{key('a'), key('b')})}
	b, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, m)
	}
	if p, ok := got.Keys.primary(); !ok || p != fingerprintOf(key('a')) || !got.Keys.contains(fingerprintOf(key('b'))) || got.Keys.contains(fingerprintOf(key('c'))) {
		t.Errorf("fingerprints %x: want a primary, b held, c not", got.Keys)
	}
	for _, bad := range []fingerprints{"abc", fingerprints(make([]byte, (MaxKeys+1)*fingerprintLen))} {
		m.Keys = bad
		if _, err := encodeMeta(m); err == nil {
			t.Errorf("encodeMeta with %d bytes of fingerprints: no error", len(bad))
		}
	}
	// The largest metadata Validate allows still fits with MaxKeys keys.
	m.Keys = fingerprints(make([]byte, MaxKeys*fingerprintLen))
	m.RPCAddr = strings.Repeat("h", 240) + ":8300"
	m.Datacenter = strings.Repeat("d", 63)
	if b, err := encodeMeta(m); err != nil || len(b) > memberlist.MetaMaxSize {
		t.Errorf("largest metadata: %d bytes, %v", len(b), err)
	}
}

func TestKeyMessages(t *testing.T) {
	op := keyRequest{op: opUse, id: 42, from: "node-1", key: key('a')}
	got, ok := decodeKeyOp(encodeKeyOp(op))
	if !ok || got.op != op.op || got.id != op.id || got.from != op.from || !bytes.Equal(got.key, op.key) {
		t.Errorf("operation round trip: %+v, %v; want %+v", got, ok, op)
	}
	reply := keyReply{id: 42, from: "node-2", reason: strings.Repeat("x", 600)}
	gotReply, ok := decodeKeyReply(encodeKeyReply(reply))
	if !ok || gotReply.id != 42 || gotReply.from != "node-2" || len(gotReply.reason) != maxReason {
		t.Errorf("reply round trip: %+v, %v; want the reason cut to %d bytes", gotReply, ok, maxReason)
	}
	enc := encodeKeyOp(op)
	for i := range len(enc) {
		if _, ok := decodeKeyOp(enc[:i]); ok {
			t.Errorf("operation cut to %d bytes decodes", i)
		}
	}
	bad := encodeKeyOp(keyRequest{op: 9, id: 1, from: "n", key: key('a')})
	if _, ok := decodeKeyOp(bad); ok {
		t.Error("unknown operation decodes")
	}
	short := encodeKeyOp(keyRequest{op: opInstall, id: 1, from: "n", key: []byte("short")})
	if _, ok := decodeKeyOp(short); ok {
		t.Error("operation with a 5-byte key decodes")
	}
}

func FuzzDecodeKeyMessages(f *testing.F) {
	f.Add(encodeKeyOp(keyRequest{op: opInstall, id: 7, from: "a", key: key('a')}))
	f.Add(encodeKeyReply(keyReply{id: 7, from: "a", reason: "no"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, ok := decodeKeyOp(b); ok {
			if again, ok := decodeKeyOp(encodeKeyOp(r)); !ok || !bytes.Equal(again.key, r.key) || again.from != r.from {
				t.Errorf("decoded operation %+v does not round-trip", r)
			}
		}
		if r, ok := decodeKeyReply(b); ok {
			if again, ok := decodeKeyReply(encodeKeyReply(r)); !ok || again != r {
				t.Errorf("decoded reply %+v does not round-trip", r)
			}
		}
	})
}
