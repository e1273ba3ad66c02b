package resolver

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// udpBatchSize is how many datagrams a reader takes (recvmmsg) and
// answers (sendmmsg) per system call at most. 16 amortizes the calls
// under load, while a batch holds up its later queries only as long as
// its earlier ones take to answer (microseconds for a cached answer).
const udpBatchSize = 16

// udpSockets returns how many UDP sockets serve: n, or one per core
// (GOMAXPROCS) for 0, so that each core's reader has a socket of its own
// and no lock is shared between them in the kernel.
func udpSockets(n int) int {
	if n == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// listenUDP binds a UDP socket to addr; with shared set, with
// SO_REUSEPORT, so that more sockets may bind the same address and the
// kernel spreads datagrams over them (by a hash of their addresses: one
// client's queries reach one socket). Only sockets of the same user may
// share the port.
func listenUDP(addr string, shared bool) (*net.UDPConn, error) {
	var lc net.ListenConfig
	if shared {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			}); err != nil {
				return err
			}
			if serr != nil {
				return fmt.Errorf("set SO_REUSEPORT: %w", serr)
			}
			return nil
		}
	}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// batchIO reads and writes one reader's batches with recvmmsg and
// sendmmsg. ipv4.PacketConn's batch calls serve an IPv6 socket as well:
// on Linux they only pass the messages to the kernel, and the addresses
// are parsed and written by their own family.
type batchIO struct {
	conn *ipv4.PacketConn
	wild bool
	in   []ipv4.Message // the read batch; Buffers[0] and OOB keep their full length
	out  []ipv4.Message // the replies queued, the first nOut of them
	bufs [][]byte       // the out buffer of each message of in
	nOut int
}

// newBatchIO returns the batch memory of one reader of sock, whose replies
// hold at most udpSize bytes.
func newBatchIO(sock *udpSocket, udpSize int) *batchIO {
	b := &batchIO{conn: ipv4.NewPacketConn(sock.conn), wild: sock.wild,
		in: make([]ipv4.Message, udpBatchSize), out: make([]ipv4.Message, udpBatchSize), bufs: make([][]byte, udpBatchSize)}
	oob := 0
	if b.wild {
		oob = oobSize()
	}
	for i := range b.in {
		b.in[i].Buffers = [][]byte{make([]byte, readBufferSize)}
		if oob > 0 {
			b.in[i].OOB = make([]byte, oob)
		}
		b.out[i].Buffers = make([][]byte, 1)
		b.bufs[i] = make([]byte, 0, udpSize)
	}
	return b
}

// read waits for datagrams and reads up to a batch of them.
func (b *batchIO) read() (int, error) {
	b.nOut = 0
	return b.conn.ReadBatch(b.in, 0)
}

// data returns the datagram i of the batch read.
func (b *batchIO) data(i int) []byte { return b.in[i].Buffers[0][:b.in[i].N] }

// from returns the sender of datagram i.
func (b *batchIO) from(i int) *net.UDPAddr {
	a, _ := b.in[i].Addr.(*net.UDPAddr)
	return a
}

// outBuf returns the buffer the reply to datagram i is copied into.
func (b *batchIO) outBuf(i int) []byte { return b.bufs[i] }

// setOut keeps buf, grown by a reply larger than expected, as the out
// buffer of datagram i.
func (b *batchIO) setOut(i int, buf []byte) { b.bufs[i] = buf }

// queue queues the reply in the out buffer of datagram i, to its sender.
func (b *batchIO) queue(i int) {
	m := &b.out[b.nOut]
	b.nOut++
	m.Buffers[0], m.Addr, m.OOB = b.bufs[i], b.in[i].Addr, nil
	if b.wild {
		m.OOB = replySource(b.in[i].OOB[:b.in[i].NN])
	}
}

// flush sends the replies queued. A reply the kernel refuses (an
// unreachable address, say) is passed over, so that the rest still go;
// the first error is returned.
func (b *batchIO) flush() error {
	var first error
	for sent := 0; sent < b.nOut; {
		n, err := b.conn.WriteBatch(b.out[sent:b.nOut], 0)
		sent += max(n, 0)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("send replies: %w", err)
			}
			if n <= 0 {
				sent++ // the message that failed
			}
		}
	}
	for i := range b.out[:b.nOut] {
		b.out[i].Buffers[0], b.out[i].Addr, b.out[i].OOB = nil, nil, nil // keep no client's data alive
	}
	b.nOut = 0
	return first
}
