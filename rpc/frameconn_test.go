package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
)

// recordingConn keeps a copy of every write.
type recordingConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, slices.Clone(p))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// TestDataFramesWrittenWhole: a call's data frames leave the pool in one
// write each, header and body together, and the frames written parse back
// into what yamux sent (the call works, with a reply larger than a frame).
func TestDataFramesWrittenWhole(t *testing.T) {
	t.Parallel()
	s, _ := startServer(t, testConfig())
	var conn *recordingConn
	cfg := DefaultPoolConfig()
	cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		conn = &recordingConn{Conn: c}
		return conn, nil
	}
	p, err := NewPool(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	blob := bytes.Repeat([]byte("cairn"), 100_000) // 500 KB: more than a window
	var reply EchoReply
	if err := p.Call(testCtx(t), s.Addr().String(), "Echo.Echo", &EchoArgs{Payload: Payload{Blob: blob}}, &reply); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if !bytes.Equal(reply.Payload.Blob, blob) {
		t.Fatal("the reply's blob differs from the request's")
	}

	conn.mu.Lock()
	defer conn.mu.Unlock()
	stream := bytes.Join(conn.writes[1:], nil) // after the first byte (RPCByte)
	frames, data := 0, 0
	for i, w := range conn.writes[1:] {
		if len(w) == yamuxHeaderSize && w[1] == 0 && binary.BigEndian.Uint32(w[8:]) > 0 {
			t.Fatalf("write %d is a data frame's header alone", i+1)
		}
	}
	for len(stream) > 0 {
		if len(stream) < yamuxHeaderSize {
			t.Fatalf("%d bytes left over after %d frames", len(stream), frames)
		}
		typ, n := stream[1], binary.BigEndian.Uint32(stream[8:12])
		stream = stream[yamuxHeaderSize:]
		frames++
		if typ == 0 {
			data++
			if uint32(len(stream)) < n {
				t.Fatalf("data frame %d announces %d bytes, %d left", frames, n, len(stream))
			}
			stream = stream[n:]
		}
	}
	if data < 2 {
		t.Fatalf("%d data frames sent, want the request's (more than one: it is larger than a window)", data)
	}
}
