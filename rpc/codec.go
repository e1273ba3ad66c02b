package rpc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// The wire format of one RPC stream is a sequence of frames, in each
// direction. A frame is a 4-byte big-endian length n and n bytes holding
// two msgpack values: a header (requestHeader or responseHeader) and a
// body (the arguments or the reply). A stream carries one call: one
// request frame, then one response frame. The headers keep net/rpc's
// sequence number (always 1 now), so the frames are those peers sent when
// net/rpc served them.
//
// The length prefix is what makes decoding untrusted input bounded: a
// frame longer than the configured maximum is refused before any of it is
// read, the bytes of a frame are buffered only as they arrive, and the
// msgpack decoder then works on a byte slice it cannot read past.

// requestHeader is the header of a request frame (net/rpc's Request, as
// the wire was when net/rpc served it).
type requestHeader struct {
	ServiceMethod string
	Seq           uint64
	// Deadline is the caller's deadline, in Unix nanoseconds by the
	// caller's clock; 0 for none. Only a server of the previous release
	// reads it (it compares it with its own clock); this one sends it for
	// them and prefers Timeout. Drop it once no release reads it.
	Deadline int64
	// Timeout is how long the caller had left when it sent the request,
	// in nanoseconds (as gRPC's grpc-timeout); 0 for none, when Deadline
	// (if any) is used instead. Sent is when the caller sent it, as its
	// session's age in nanoseconds on the caller's monotonic clock: the
	// server takes off the time left what the request lost on the way
	// (transit.go). The server runs the method under the result, and
	// refuses a request it reads after it: a server that was stopped
	// (SIGSTOP, a long pause) or cut off must not carry out, when it
	// resumes, a write its caller gave up on and may have sent again
	// elsewhere since.
	Timeout int64 `codec:",omitempty"`
	Sent    int64 `codec:",omitempty"`
}

// deadlineOf is h's deadline on this server's clock, for a request read
// at arrived on a session whose transit baseline is b (nil: none), and
// whether it has one.
// offset is ServerConfig.ClockOffset.
func (h requestHeader) deadlineOf(b *transitBaseline, arrived time.Time, offset time.Duration) (time.Time, bool) {
	switch {
	case h.Timeout != 0:
		return arrived.Add(time.Duration(h.Timeout) - b.delay(time.Duration(h.Sent), arrived)), true
	case h.Deadline != 0: // a caller of the previous release
		return time.Unix(0, h.Deadline).Add(-offset), true
	}
	return time.Time{}, false
}

// responseHeader is the header of a response frame (net/rpc's Response).
type responseHeader struct {
	ServiceMethod string
	Seq           uint64
	Error         string
	// Now is the server's wall clock as it answered, in Unix
	// nanoseconds (0 from a server of the previous release): the caller
	// measures how far the clocks disagree (skew.go). Nothing decides
	// on it.
	Now int64 `codec:",omitempty"`
}

// msgpackHandle is the msgpack configuration of every frame. It is set up
// once here and never modified, which makes it safe to share.
var msgpackHandle = newMsgpackHandle()

func newMsgpackHandle() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.WriteExt = true    // the current msgpack spec: str and bin apart, time.Time as the timestamp extension
	h.RawToString = true // strings inside interface{} values decode as string, not []byte
	h.MapType = reflect.TypeFor[map[string]any]()
	h.MaxInitLen = 4096 // never preallocate more elements than this on a peer's word
	return h
}

// smallBuffer is the capacity a codec keeps for reuse between frames;
// larger buffers, from large messages, are dropped after use.
const smallBuffer = 64 << 10

// streamCodec reads and writes frames on one stream: the server with
// readRequestHeader, decode and writeResponse, the pool with call. It is
// used by one goroutine at a time, reading and writing in turn, so it
// needs no lock of its own. (The server's watch for the caller hanging up
// reads the stream through r while the method runs, when the codec is
// not used.)
type streamCodec struct {
	rwc io.ReadWriteCloser
	r   *bufio.Reader
	w   *bufio.Writer
	// maxRead and maxWrite cap a frame read and one written: a server
	// reads requests and writes replies, a pool the other way round.
	maxRead, maxWrite int

	rbuf bytes.Buffer
	dec  *codec.Decoder

	wbuf []byte
	enc  *codec.Encoder

	// onWriteError, if set, is told about a response that could not be
	// written (the stream is closed then; see writeResponse).
	onWriteError func(error)
	// clockOffset is added to the time a server puts in its replies
	// (ServerConfig.ClockOffset); for a pool, to the absolute deadline it
	// sends (PoolConfig.ClockOffset).
	clockOffset time.Duration
	// serverNow is the time the server put in the last reply call read
	// (responseHeader.Now).
	serverNow int64
}

func newStreamCodec(rwc io.ReadWriteCloser, maxRead, maxWrite int) *streamCodec {
	c := &streamCodec{
		rwc:      rwc,
		r:        bufio.NewReader(rwc),
		w:        bufio.NewWriter(rwc),
		maxRead:  maxRead,
		maxWrite: maxWrite,
		dec:      codec.NewDecoderBytes(nil, msgpackHandle),
	}
	c.enc = codec.NewEncoderBytes(&c.wbuf, msgpackHandle)
	return c
}

// readFrame reads the next frame and points the decoder at it. It returns
// io.EOF, unwrapped, when the stream ends cleanly between frames.
func (c *streamCodec) readFrame() error {
	var prefix [4]byte
	if _, err := io.ReadFull(c.r, prefix[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(prefix[:])
	if uint64(n) > uint64(c.maxRead) {
		return fmt.Errorf("%w: peer announced %d bytes, limit %d", ErrMessageTooLarge, n, c.maxRead)
	}
	if c.rbuf.Cap() > smallBuffer {
		c.rbuf = bytes.Buffer{}
	}
	c.rbuf.Reset()
	// CopyN grows the buffer as bytes arrive, so a peer announcing a
	// large frame and sending nothing costs nothing.
	if _, err := io.CopyN(&c.rbuf, c.r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	c.dec.ResetBytes(c.rbuf.Bytes())
	return nil
}

// decode decodes the next value of the current frame into v.
func (c *streamCodec) decode(v any) error {
	if err := c.dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrCodec, err)
	}
	return nil
}

// writeFrame encodes header and body into one frame and writes it. An
// encoding error wraps ErrCodec and a frame over the limit
// ErrMessageTooLarge; nothing is written then. Any other error is the
// stream's.
func (c *streamCodec) writeFrame(header, body any) error {
	if cap(c.wbuf) > smallBuffer {
		c.wbuf = nil
	}
	c.wbuf = c.wbuf[:0]
	c.enc.ResetBytes(&c.wbuf)
	if err := c.enc.Encode(header); err != nil {
		return fmt.Errorf("%w: encode header: %v", ErrCodec, err)
	}
	if err := c.enc.Encode(body); err != nil {
		return fmt.Errorf("%w: encode body: %v", ErrCodec, err)
	}
	if len(c.wbuf) > c.maxWrite {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, len(c.wbuf), c.maxWrite)
	}
	var prefix [4]byte
	binary.BigEndian.PutUint32(prefix[:], uint32(len(c.wbuf)))
	if _, err := c.w.Write(prefix[:]); err != nil {
		return err
	}
	if _, err := c.w.Write(c.wbuf); err != nil {
		return err
	}
	return c.w.Flush()
}

// encodeFrame returns header and body encoded as one frame, for an answer
// written more than once as it is.
func encodeFrame(header, body any) ([]byte, error) {
	var b []byte
	enc := codec.NewEncoderBytes(&b, msgpackHandle)
	if err := enc.Encode(header); err != nil {
		return nil, fmt.Errorf("%w: encode header: %v", ErrCodec, err)
	}
	if err := enc.Encode(body); err != nil {
		return nil, fmt.Errorf("%w: encode body: %v", ErrCodec, err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), nil
}

// readRequestHeader reads the request frame and decodes its header; the
// arguments are decoded next, with decode.
func (c *streamCodec) readRequestHeader() (requestHeader, error) {
	var h requestHeader
	if err := c.readFrame(); err != nil {
		return h, err
	}
	err := c.decode(&h)
	return h, err
}

// writeResponse answers the request whose header is req: with callErr's
// text (through WireError, so a field error or a sentinel reaches the
// caller) when it is not nil, else with reply. A reply that cannot be
// encoded, or is too large, is answered with an error instead, so the
// caller learns why. When the stream itself fails the codec closes it and
// tells onWriteError: the caller has gone, and there is nobody else to
// tell.
func (c *streamCodec) writeResponse(req requestHeader, callErr error, reply any) {
	h := responseHeader{ServiceMethod: req.ServiceMethod, Seq: req.Seq, Now: time.Now().Add(c.clockOffset).UnixNano()}
	if callErr != nil {
		h.Error, reply = WireError(callErr).Error(), nil
	}
	err := c.writeFrame(h, reply)
	if errors.Is(err, ErrCodec) || errors.Is(err, ErrMessageTooLarge) {
		h.Error = "rpc: cannot send reply: " + err.Error()
		err = c.writeFrame(h, nil)
	}
	if err != nil {
		_ = c.rwc.Close()
		if c.onWriteError != nil {
			c.onWriteError(err)
		}
	}
}

// call makes one call on the stream: it writes the request, reads the
// response and decodes the reply into reply (unless reply is nil). An
// error returned by the remote method is a *RemoteError, with the structure
// WireError encoded decoded back; encoding and decoding errors wrap
// ErrCodec; a message over the limit ErrMessageTooLarge; anything else
// comes from the stream. deadline, when not zero, goes with the request
// as the time left (requestHeader.Timeout), sent as the age of the
// session that began at epoch.
func (c *streamCodec) call(method string, deadline, epoch time.Time, args, reply any) error {
	const seq = 1 // one call per stream
	req := requestHeader{ServiceMethod: method, Seq: seq}
	if !deadline.IsZero() {
		now := time.Now()
		req.Sent = int64(now.Sub(epoch))
		// At least 1ns: 0 would mean "no deadline".
		req.Timeout = max(int64(deadline.Sub(now)), 1)
		req.Deadline = deadline.Add(c.clockOffset).UnixNano()
	}
	if err := c.writeFrame(req, args); err != nil {
		return err
	}
	if err := c.readFrame(); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the stream ended before the reply
		}
		return err
	}
	var h responseHeader
	if err := c.dec.Decode(&h); err != nil {
		return fmt.Errorf("malformed response header: %v", err)
	}
	if h.Seq != seq {
		return fmt.Errorf("response for call %d, want %d", h.Seq, seq)
	}
	c.serverNow = h.Now
	if h.Error != "" {
		return newRemoteError(h.Error)
	}
	if reply == nil {
		return nil
	}
	if err := c.decode(reply); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	return nil
}
