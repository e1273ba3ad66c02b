package resolver

import (
	"encoding/binary"
	"testing"
)

// TestSipHash24 checks the vectors of the SipHash paper (appendix A) and
// of its reference implementation: key 00..0f, message 00..(n-1).
func TestSipHash24(t *testing.T) {
	var key [16]byte
	for i := range key {
		key[i] = byte(i)
	}
	k0, k1 := binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])
	msg := make([]byte, 64)
	for i := range msg {
		msg[i] = byte(i)
	}
	for _, tc := range []struct {
		n    int
		want uint64
	}{
		{0, 0x726fdb47dd0e0e31}, {1, 0x74f839c593dc67fd}, {15, 0xa129ca6149be45e5},
	} {
		if got := sipHash24(k0, k1, msg[:tc.n]); got != tc.want {
			t.Errorf("%d bytes: got %#x, want %#x", tc.n, got, tc.want)
		}
	}
	if got := testing.AllocsPerRun(100, func() { sipHash24(k0, k1, msg[:32]) }); got != 0 {
		t.Errorf("allocations: got %v, want 0", got)
	}
}
