package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// Fuzzy is the service the fuzz tests call: fast methods only, so that no
// input can make a call wait.
type Fuzzy struct{}

func (Fuzzy) Echo(_ context.Context, args *EchoArgs, reply *EchoReply) error {
	reply.Payload = args.Payload
	return nil
}

func (Fuzzy) Map(_ context.Context, args *map[string]any, reply *map[string]any) error {
	*reply = *args
	return nil
}

// frame returns a valid request frame.
func frame(t testing.TB, method string, seq uint64, body any) []byte {
	var buf bytes.Buffer
	c := newStreamCodec(nopCloser{ReadWriter: &buf}, 1<<20, 1<<20)
	if err := c.writeFrame(requestHeader{ServiceMethod: method, Seq: seq}, body); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type nopCloser struct{ io.ReadWriter }

func (nopCloser) Close() error { return nil }

// streamInput is a stream whose peer sent in and reads nothing back.
type streamInput struct {
	io.Reader
	io.Writer
}

func (streamInput) Close() error                      { return nil }
func (streamInput) SetReadDeadline(t time.Time) error { return nil }

func codecSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add(frame(f, "Fuzzy.Echo", 1, &EchoArgs{Payload: samplePayload()}))
	f.Add(append(frame(f, "Fuzzy.Map", 1, map[string]any{"a": []any{1, "b"}}), frame(f, "Fuzzy.Echo", 2, nil)...))
	f.Add(frame(f, "Nope.Nope", 7, "x"))
	f.Add([]byte{0, 0, 0, 5, 0x92, 0xa1, 'x', 0x01, 0xc0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})                         // announces 4 GiB
	f.Add([]byte{0, 0, 0, 6, 0x92, 0xa0, 0x01, 0xdd, 0xff, 0xff}) // array of 2^32-ish
}

// FuzzServerCodec feeds random bytes, as one stream's content, to the
// server's stream handler: it must neither panic nor hang, and must never
// hold more than the frame limit.
func FuzzServerCodec(f *testing.F) {
	codecSeeds(f)
	cfg := testConfig()
	cfg.MaxMessageSize = 64 << 10
	srv, err := NewServer(cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.Register("Fuzzy", Fuzzy{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		srv.serveStream(streamInput{bytes.NewReader(data), io.Discard}, nil, nil, "")
	})
}

// FuzzClientCodec feeds random bytes to the calling side as a server's
// answer.
func FuzzClientCodec(f *testing.F) {
	codecSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newStreamCodec(streamInput{bytes.NewReader(data), io.Discard}, 64<<10, 64<<10)
		var reply EchoReply
		_ = c.call("Fuzzy.Echo", time.Time{}, time.Time{}, &EchoArgs{}, &reply)
	})
}

// yamuxFrame builds a yamux frame: version 0, type, flags, stream ID,
// length, then data.
func yamuxFrame(typ byte, flags uint16, id uint32, data []byte) []byte {
	h := make([]byte, 12, 12+len(data))
	h[1] = typ
	binary.BigEndian.PutUint16(h[2:], flags)
	binary.BigEndian.PutUint32(h[4:], id)
	binary.BigEndian.PutUint32(h[8:], uint32(len(data)))
	return append(h, data...)
}

// FuzzServeConn feeds random bytes to the server as a whole connection:
// first byte, yamux frames, RPC frames. The server must neither panic nor
// hang: once the peer has sent everything and hung up, the connection's
// goroutines must end.
func FuzzServeConn(f *testing.F) {
	const (
		typeData   = 0
		typeWindow = 1
		flagSYN    = 1
		flagFIN    = 4
	)
	call := frame(f, "Fuzzy.Echo", 1, &EchoArgs{Payload: samplePayload()})
	session := func(body ...[]byte) []byte {
		return append([]byte{RPCByte}, bytes.Join(body, nil)...)
	}
	f.Add([]byte{})
	f.Add([]byte{RaftByte, 'x'})
	f.Add([]byte{TLSByte, 0x16, 0x03, 0x01, 0x00, 0x05}) // a TLS record header, to a server without TLS
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add(session(yamuxFrame(typeWindow, flagSYN, 1, nil), yamuxFrame(typeData, 0, 1, call), yamuxFrame(typeData, flagFIN, 1, nil)))
	f.Add(session(yamuxFrame(typeData, flagSYN, 1, call), yamuxFrame(typeData, flagSYN, 3, call[:9])))
	f.Add(session(yamuxFrame(2, flagSYN, 0, nil), yamuxFrame(3, 0, 0, nil)))
	f.Add(session(yamuxFrame(typeData, flagSYN, 1, []byte{0xff, 0xff, 0xff, 0xff})))

	cfg := testConfig()
	cfg.HandshakeTimeout = time.Second
	cfg.MaxMessageSize = 64 << 10
	cfg.MaxCallsPerClient = 8
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := NewServer(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register("Fuzzy", Fuzzy{}); err != nil {
			t.Fatal(err)
		}
		_ = s.RaftLayer().Close() // Raft connections are closed at once

		client, server := net.Pipe()
		s.wg.Go(func() { s.handleConn(server, "") })
		s.wg.Go(func() { _, _ = io.Copy(io.Discard, client) }) // replies, pings, go-aways
		_ = client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = client.Write(data)
		_ = client.Close()

		done := make(chan struct{})
		go func() {
			s.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("connection goroutines still running 10s after the peer hung up")
		}
	})
}
