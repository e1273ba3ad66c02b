package rpc

import (
	"encoding/binary"
	"net"
)

// yamux v0.1.2's send loop writes each frame with two writes to the
// connection: the 12-byte header, then the body of a data frame. Each is
// a syscall (and over TLS a record of its own), and a call or a change
// feed reply is a few small frames, so that was half of a busy server's
// writes. frameConn holds a data frame's header until its body comes and
// writes the two at once.
//
// It relies on what the send loop does, which the tests pin: one writer,
// a data header (version 0, type 0) with a non-zero length followed at
// once by a body write of that length. Any other write goes straight
// through.

// yamuxHeaderSize is the size of a yamux frame header.
const yamuxHeaderSize = 12

// frameConn is a connection under a yamux session whose data frames are
// written in one write each.
type frameConn struct {
	net.Conn
	hdr  [yamuxHeaderSize]byte
	held bool   // hdr waits for its body
	buf  []byte // reused for header and body
}

func newFrameConn(conn net.Conn) net.Conn { return &frameConn{Conn: conn} }

func (c *frameConn) Write(p []byte) (int, error) {
	if c.held {
		c.held = false
		c.buf = append(append(c.buf[:0], c.hdr[:]...), p...)
		n, err := c.Conn.Write(c.buf)
		if cap(c.buf) > smallBuffer {
			c.buf = nil
		}
		return max(n-yamuxHeaderSize, 0), err
	}
	if len(p) == yamuxHeaderSize && p[0] == 0 && p[1] == 0 && binary.BigEndian.Uint32(p[8:]) > 0 {
		copy(c.hdr[:], p)
		c.held = true
		return len(p), nil
	}
	return c.Conn.Write(p)
}
