package gossip

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []meta{
		{Role: RoleServer, Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1, WANPort: 8302},
		{Role: RoleClient, Datacenter: "eu-west-2", ProtocolVersion: 1},
		{Role: RoleServer, Datacenter: strings.Repeat("d", 63), RPCAddr: "[2001:db8::1]:8300", ProtocolVersion: 200},
		{Role: RoleServer, Datacenter: "dc1", RPCAddr: "server-1.example.com:8300", ProtocolVersion: 1, WANPort: 65535},
		{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1, NodeID: "adf4238a-882b-9ddc-4a9d-5b6758e4159e",
			Build: "v1.2.3:abcdef12", ProtocolMin: 1, ProtocolMax: 2},
		{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1, ProtocolMin: 5},
		{Role: RoleServer, Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1, Features: FeatureBatchedWrites},
	} {
		b, err := encodeMeta(m)
		if err != nil {
			t.Fatalf("encodeMeta(%+v): %v", m, err)
		}
		got, err := decodeMeta(b)
		if err != nil || got != m {
			t.Errorf("decodeMeta(encodeMeta(%+v)) = %+v, %v; want it back", m, got, err)
		}
	}
}

func TestMetaIsCompact(t *testing.T) {
	b, err := encodeMeta(meta{Role: RoleServer, Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1, WANPort: 8302})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 40 {
		t.Errorf("server metadata is %d bytes, want at most 40: %q", len(b), b)
	}
}

func TestEncodeMetaTooLong(t *testing.T) {
	if _, err := encodeMeta(meta{Role: RoleServer, Datacenter: "dc1", RPCAddr: strings.Repeat("h", 256) + ":1", ProtocolVersion: 1}); err == nil {
		t.Error("encodeMeta with a 258-byte RPC address: no error")
	}
}

func TestDecodeMetaSkipsUnknownKeys(t *testing.T) {
	b := []byte{metaVersion, 'z', 3, 'x', 'y', 'z', keyRole, 6}
	b = append(b, "client"...)
	b = append(b, keyDC, 3, 'd', 'c', '1', keyProtocol, 1, 1)
	got, err := decodeMeta(b)
	if want := (meta{Role: RoleClient, Datacenter: "dc1", ProtocolVersion: 1}); err != nil || got != want {
		t.Errorf("decodeMeta with an unknown key = %+v, %v; want %+v, nil", got, err, want)
	}
}

func TestDecodeMetaRejects(t *testing.T) {
	valid, _ := encodeMeta(meta{Role: RoleServer, Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1})
	field := func(key byte, val string) []byte { return append([]byte{key, byte(len(val))}, val...) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	v := []byte{metaVersion}
	role, dc, proto := field(keyRole, "client"), field(keyDC, "dc1"), field(keyProtocol, "\x01")
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version 2", append([]byte{2}, valid[1:]...)},
		{"too long", append(bytes.Clone(valid), make([]byte, memberlist.MetaMaxSize)...)},
		{"truncated header", append(bytes.Clone(valid), keyRole)},
		{"truncated value", valid[:len(valid)-1]},
		{"repeated key", cat(valid, field(keyDC, "dc2"))},
		{"no role", cat(v, dc, proto)},
		{"unknown role", cat(v, field(keyRole, "witch"), dc, proto)},
		{"no datacenter", cat(v, role, proto)},
		{"bad datacenter", cat(v, role, field(keyDC, "dc.1"), proto)},
		{"no protocol", cat(v, role, dc)},
		{"protocol 0", cat(v, role, dc, field(keyProtocol, "\x00"))},
		{"protocol 2 bytes", cat(v, role, dc, field(keyProtocol, "\x01\x01"))},
		{"server without rpc", cat(v, field(keyRole, "server"), dc, proto)},
		{"client with rpc", cat(v, role, dc, proto, field(keyRPCAddr, "10.0.0.1:8300"))},
		{"rpc without port", cat(v, field(keyRole, "server"), dc, proto, field(keyRPCAddr, "10.0.0.1"))},
		{"rpc port 0", cat(v, field(keyRole, "server"), dc, proto, field(keyRPCAddr, "10.0.0.1:0"))},
		{"versions 1 byte", cat(v, role, dc, proto, field(keyVersions, "\x01"))},
		{"features 2 bytes", cat(v, role, dc, proto, field(keyFeatures, "\x01\x00"))},
	} {
		if got, err := decodeMeta(tc.in); !errors.Is(err, ErrBadMeta) {
			t.Errorf("%s: decodeMeta(%q) = %+v, %v; want ErrBadMeta", tc.name, tc.in, got, err)
		}
	}
}

// FuzzDecodeMeta feeds decodeMeta arbitrary bytes: it must not panic, and
// whatever it accepts must encode back to metadata that decodes the same.
func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []meta{
		{Role: RoleServer, Datacenter: "dc1", RPCAddr: "10.0.0.1:8300", ProtocolVersion: 1},
		{Role: RoleClient, Datacenter: "dc2", ProtocolVersion: 1},
	} {
		b, _ := encodeMeta(m)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{metaVersion})
	f.Add([]byte{metaVersion, keyRole, 255})
	f.Add([]byte{2, 'r', 1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrBadMeta) {
				t.Fatalf("decodeMeta error %v does not wrap ErrBadMeta", err)
			}
			return
		}
		enc, err := encodeMeta(m)
		if err != nil {
			t.Fatalf("accepted %+v does not encode: %v", m, err)
		}
		again, err := decodeMeta(enc)
		if err != nil || again != m {
			t.Fatalf("re-decode of %+v = %+v, %v", m, again, err)
		}
	})
}

func FuzzDecodeIntent(f *testing.F) {
	f.Add(encodeIntent("web-1"))
	f.Add([]byte{msgLeaveIntent, 0})
	f.Add(encodeIntentOf(msgPruneIntent, "web-1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if name, prune, ok := decodeIntent(b); ok && !bytes.Equal(encodeIntentOf(b[0], name), b) || ok && prune != (b[0] == msgPruneIntent) {
			t.Fatalf("decodeIntent(%q) = %q, which encodes differently", b, name)
		}
	})
}
