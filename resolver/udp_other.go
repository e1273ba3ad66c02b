//go:build !linux

package resolver

import (
	"net"
)

// udpSockets returns 1 whatever was asked: only Linux spreads the
// datagrams of one port over several sockets (SO_REUSEPORT); elsewhere
// the option either is missing or sends every datagram to one socket.
func udpSockets(int) int { return 1 }

// listenUDP binds a UDP socket to addr; shared is never set here
// (udpSockets).
func listenUDP(addr string, _ bool) (*net.UDPConn, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// batchIO reads and writes batches of one datagram: without recvmmsg a
// reader reads, answers and replies to one at a time, through the same
// loop as on Linux, with ReadMsgUDP and WriteMsgUDP (whose control
// messages name a wild socket's reply source).
type batchIO struct {
	conn   *net.UDPConn
	wild   bool
	in     []byte
	oob    []byte
	n, nn  int
	remote *net.UDPAddr
	out    []byte
	queued bool
}

// newBatchIO returns the memory of one reader of sock, whose replies hold
// at most udpSize bytes.
func newBatchIO(sock *udpSocket, udpSize int) *batchIO {
	b := &batchIO{conn: sock.conn, wild: sock.wild, in: make([]byte, readBufferSize), out: make([]byte, 0, udpSize)}
	if b.wild {
		b.oob = make([]byte, oobSize())
	}
	return b
}

func (b *batchIO) read() (int, error) {
	b.queued = false
	var err error
	b.n, b.nn, _, b.remote, err = b.conn.ReadMsgUDP(b.in, b.oob)
	if err != nil {
		return 0, err
	}
	return 1, nil
}

func (b *batchIO) data(int) []byte          { return b.in[:b.n] }
func (b *batchIO) from(int) *net.UDPAddr    { return b.remote }
func (b *batchIO) outBuf(int) []byte        { return b.out }
func (b *batchIO) setOut(_ int, buf []byte) { b.out = buf }
func (b *batchIO) queue(int)                { b.queued = true }

// flush sends the reply queued, if any.
func (b *batchIO) flush() error {
	if !b.queued {
		return nil
	}
	b.queued = false
	var oob []byte
	if b.wild {
		oob = replySource(b.oob[:b.nn])
	}
	_, _, err := b.conn.WriteMsgUDP(b.out, oob, b.remote)
	return err
}
