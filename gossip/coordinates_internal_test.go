package gossip

import (
	"math"
	"reflect"
	"testing"

	"github.com/hashicorp/serf/coordinate"
)

func TestCoordinateEncoding(t *testing.T) {
	t.Parallel()
	c := coordinate.NewCoordinate(coordinate.DefaultConfig())
	c.Vec[0], c.Vec[7] = 0.0012, -0.0003
	c.Error, c.Adjustment, c.Height = 0.4, -0.0001, 0.00002
	b := encodeCoordinate(c)
	if len(b) != 90 {
		t.Errorf("encoded 8 dimensions in %d bytes, want 90", len(b))
	}
	got, err := decodeCoordinate(b)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: got %+v, %v; want %+v", got, err, c)
	}
	nan := c.Clone()
	nan.Vec[2] = math.NaN()
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"unknown version": append([]byte{9}, b[1:]...),
		"short":           b[:len(b)-1],
		"long":            append(append([]byte(nil), b...), 0),
		"NaN":             encodeCoordinate(nan),
	} {
		if _, err := decodeCoordinate(bad); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// FuzzDecodeCoordinate: acks come from the network; decoding must never
// panic, and what it accepts must encode back to the same bytes.
func FuzzDecodeCoordinate(f *testing.F) {
	f.Add(encodeCoordinate(coordinate.NewCoordinate(coordinate.DefaultConfig())))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCoordinate(b)
		if err != nil {
			return
		}
		if again := encodeCoordinate(c); !reflect.DeepEqual(again, b) {
			t.Errorf("re-encoded %x, want %x", again, b)
		}
	})
}
