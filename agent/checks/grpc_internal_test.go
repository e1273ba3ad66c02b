package checks

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestEncodeHealthRequest(t *testing.T) {
	long := strings.Repeat("s", 200) // a length that needs a two-byte varint
	tests := []struct {
		service string
		want    []byte
	}{
		{"", []byte{0, 0, 0, 0, 0}},
		{"web", []byte{0, 0, 0, 0, 5, 0x0a, 3, 'w', 'e', 'b'}},
		{long, append([]byte{0, 0, 0, 0, 203, 0x0a, 0xc8, 0x01}, long...)},
	}
	for _, tc := range tests {
		if got := encodeHealthRequest(tc.service); !bytes.Equal(got, tc.want) {
			t.Errorf("encodeHealthRequest(%.10q): got % x, want % x", tc.service, got, tc.want)
		}
	}
}

func TestDecodeHealthResponse(t *testing.T) {
	tests := []struct {
		name    string
		body    []byte
		want    uint64
		wantErr string
	}{
		{"serving", []byte{0, 0, 0, 0, 2, 0x08, 1}, 1, ""},
		{"not serving", []byte{0, 0, 0, 0, 2, 0x08, 2}, 2, ""},
		{"empty message is UNKNOWN", []byte{0, 0, 0, 0, 0}, 0, ""},
		{"unknown fields skipped", []byte{0, 0, 0, 0, 15,
			0x12, 2, 'h', 'i', // field 2, bytes
			0x19, 1, 2, 3, 4, 5, 6, 7, 8, // field 3, fixed64
			0x08, 1}, 1, ""},
		{"last status wins", []byte{0, 0, 0, 0, 4, 0x08, 2, 0x08, 1}, 1, ""},
		{"short", []byte{0, 0, 0}, 0, "shorter than a message header"},
		{"compressed", []byte{1, 0, 0, 0, 2, 0x08, 1}, 0, "compressed"},
		{"length too long", []byte{0, 0, 0, 0, 9, 0x08, 1}, 0, "9 bytes announced"},
		{"two messages", []byte{0, 0, 0, 0, 2, 0x08, 1, 0, 0, 0, 0, 0}, 0, "announced"},
		{"status not a varint", []byte{0, 0, 0, 0, 3, 0x0a, 1, 1}, 0, "wire type 2"},
		{"truncated varint", []byte{0, 0, 0, 0, 2, 0x08, 0x80}, 0, "bad protobuf varint"},
		{"truncated bytes", []byte{0, 0, 0, 0, 3, 0x12, 5, 'x'}, 0, "truncated"},
		{"group wire type", []byte{0, 0, 0, 0, 1, 0x0b}, 0, "wire type 3"},
	}
	for _, tc := range tests {
		got, err := decodeHealthResponse(tc.body)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: got error %v, want status %d", tc.name, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: got (%d, %v), want an error containing %q", tc.name, got, err, tc.wantErr)
		case tc.wantErr == "" && got != tc.want:
			t.Errorf("%s: got status %d, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzDecodeHealthResponse: whatever a server sends, decoding returns a
// status or an error; it never panics or reads past the body.
func FuzzDecodeHealthResponse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 0x08, 1})
	f.Add([]byte{0, 0, 0, 0, 4, 0x12, 0xff, 0xff, 0x0f})
	f.Add([]byte{0, 0, 0, 0, 11, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, body []byte) {
		decodeHealthResponse(body)
	})
}

func TestGRPCTimeout(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "1m"},
		{time.Microsecond, "1m"},
		{1500 * time.Millisecond, "1500m"},
		{27 * time.Hour, "97200000m"}, // 8 digits: still milliseconds
		{30 * time.Hour, "108000S"},
	}
	for _, tc := range tests {
		if got := grpcTimeout(tc.d); got != tc.want {
			t.Errorf("grpcTimeout(%s): got %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is 2 bytes: not cut in half
		{"é", 0, ""},
	}
	for _, tc := range tests {
		if got := truncate([]byte(tc.in), tc.limit); got != tc.want {
			t.Errorf("truncate(%q, %d): got %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}
