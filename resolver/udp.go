package resolver

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
)

// cairn serves UDP itself rather than through miekg/dns's server, which
// reads one datagram per system call and starts a goroutine for each. A
// socket here is read by reader goroutines, each owning its buffers: a
// reader takes a batch of datagrams at once (recvmmsg on Linux,
// udp_linux.go; one elsewhere, udp_other.go), answers each through
// ServeDNS in turn, and sends the batch's replies at once (sendmmsg). On
// Linux there is one socket per core, all bound to the same address with
// SO_REUSEPORT, so that the kernel spreads the queries over them.

// maxReadersPerSocket bounds the readers of one socket. A reader answers
// its batch itself, so a query waiting for its Source (a cache miss) or
// a recursor holds it up; while every reader of a socket is busy another
// is started (see udpReader.serve), so that such a query does not stop
// the others from being read. The bound keeps a flood of slow queries
// from taking unbounded memory: past it, datagrams queue in the socket
// and the kernel drops them once its buffer is full.
const maxReadersPerSocket = 32

// udpSocket is one UDP socket of a Server and what its readers share.
type udpSocket struct {
	conn *net.UDPConn
	// wild is set for a socket bound to an unspecified address (0.0.0.0,
	// ::): each reply must then name the address its query was sent to
	// as its source, or a client of a host with several addresses gets
	// its reply from another one and drops it.
	wild bool
	// idle counts the readers waiting for datagrams (or started and
	// about to), readers those running; both decide when a reader is
	// added or leaves (udpReader.serve).
	idle    atomic.Int32
	readers atomic.Int32
	// read counts the datagrams read, which tests check every socket
	// of a port gets.
	read atomic.Uint64
	// spares keeps the memory of readers that left, for the next one
	// added, so that readers coming and going under load do not each
	// allocate their buffers.
	spares sync.Pool
}

// udpReader reads, answers and replies to batches of datagrams on one
// socket. Its buffers are its own: the packer's buffer a reply is packed
// into is reused for the next one, so each reply is copied into the out
// buffer of its message until the batch is sent.
type udpReader struct {
	s    *Server
	sock *udpSocket
	io   *batchIO // the platform's batch reads and writes
	w    udpWriter
}

// startUDP starts the first reader of each socket of s.
func (s *Server) startUDP(socks []*udpSocket) {
	for _, sock := range socks {
		s.addReader(sock)
	}
}

// addReader starts one more reader on sock, counted running and idle from
// now: a reader started but not yet reading is as good as idle, and
// counting it so keeps busy readers from adding more before it runs.
func (s *Server) addReader(sock *udpSocket) bool {
	if sock.readers.Add(1) > maxReadersPerSocket {
		sock.readers.Add(-1)
		return false
	}
	sock.idle.Add(1)
	r, _ := sock.spares.Get().(*udpReader)
	if r == nil {
		r = &udpReader{s: s, sock: sock, io: newBatchIO(sock, int(s.cfg.UDPSize))}
		r.w.local = sock.conn.LocalAddr()
	}
	s.wg.Go(r.serve)
	return true
}

// serve reads batches until the socket is closed. When its read leaves
// no reader of the socket idle it adds one, so that the socket is still
// read while this one answers (which may wait on a Source or a
// recursor); once it is done and at least two others are idle, it
// leaves, so that a socket keeps one reader, a few under load, and more
// only while queries are slow.
func (r *udpReader) serve() {
	sock, s := r.sock, r.s
	defer sock.readers.Add(-1)
	for {
		n, err := r.io.read()
		if sock.idle.Add(-1) == 0 && err == nil {
			s.addReader(sock)
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("DNS server stopped", "net", "udp", "err", err)
			}
			return
		}
		sock.read.Add(uint64(n))
		for i := range n {
			r.w.reset(r.io.from(i), r.io.outBuf(i))
			s.serveDatagram(&r.w, r.io.data(i))
			r.io.setOut(i, r.w.wire)
			if r.w.written {
				r.io.queue(i)
			}
		}
		// A lost reply is the client's to retry; nothing is logged per
		// query, and a closed socket ends the loop at the next read.
		_ = r.io.flush()
		if sock.idle.Load() >= 2 {
			sock.spares.Put(r)
			return
		}
		sock.idle.Add(1)
	}
}

// serveDatagram answers the datagram b as miekg/dns's server did: one
// shorter than a header, or a response, gets nothing (any reply could be
// used for amplification, or bounce between two servers); one that
// miekg's DefaultMsgAcceptFunc rejects by its header (an opcode other
// than QUERY or NOTIFY: NOTIMP; not one question, or more records than a
// query carries: FORMERR) or that does not unpack (FORMERR) is answered
// without the handler; the rest go to ServeDNS.
func (s *Server) serveDatagram(w *udpWriter, b []byte) {
	if len(b) < 12 {
		return
	}
	bits := binary.BigEndian.Uint16(b[2:])
	if bits&(1<<15) != 0 {
		return
	}
	qd, an, ns, ar := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:]),
		binary.BigEndian.Uint16(b[8:]), binary.BigEndian.Uint16(b[10:])
	switch opcode := int(bits>>11) & 0xF; {
	case opcode != dns.OpcodeQuery && opcode != dns.OpcodeNotify:
		rejectHeader(w, b, dns.RcodeNotImplemented)
		return
	case qd != 1 || an > 1 || ns > 1 || ar > 2:
		rejectHeader(w, b, dns.RcodeFormatError)
		return
	}
	// A question whose reply the wire cache keeps is answered from b in
	// place (wirequery.go); any other is unpacked and served as usual.
	if req, err := s.servePacket(w, b); err != nil {
		reject(w, req, dns.RcodeFormatError)
	}
}

// rejectHeader answers a query rejected by its header alone with rcode,
// echoing the header as miekg/dns's server did (which never unpacked the
// rest).
func rejectHeader(w dns.ResponseWriter, b []byte, rcode int) {
	var h [12]byte
	copy(h[:], b)
	clear(h[4:]) // no sections: only the header is unpacked
	req := new(dns.Msg)
	if err := req.Unpack(h[:]); err != nil {
		return // cannot happen: a bare header always unpacks
	}
	reject(w, req, rcode)
}

// reject answers req, unpacked as far as it would go, with rcode
// (FORMERR or NOTIMP): its header and first question, no records, as
// miekg/dns's server did.
func reject(w dns.ResponseWriter, req *dns.Msg, rcode int) {
	opcode := req.Opcode
	req.SetRcodeFormatError(req)
	req.Zero = false
	if rcode == dns.RcodeNotImplemented {
		req.Opcode = opcode
		req.Rcode = rcode
	}
	req.Ns, req.Answer, req.Extra = nil, nil, nil
	_ = w.WriteMsg(req)
}

// errReplied reports a second reply to one query: the first is sent.
var errReplied = errors.New("resolver: the query was already replied to")

// udpWriter is the dns.ResponseWriter of a datagram: it copies the reply
// into wire, its reader's out buffer for the message, to be sent with the
// rest of the batch. Its remote address is a *net.UDPAddr, so the reply is
// fitted to a UDP size and may be rate-limited.
type udpWriter struct {
	local   net.Addr
	remote  *net.UDPAddr
	wire    []byte
	written bool
}

// reset readies w for the query from remote, its reply to go into out.
func (w *udpWriter) reset(remote *net.UDPAddr, out []byte) {
	w.remote, w.wire, w.written = remote, out[:0], false
}

func (w *udpWriter) LocalAddr() net.Addr  { return w.local }
func (w *udpWriter) RemoteAddr() net.Addr { return w.remote }

// WriteMsg packs m with miekg/dns: the handler packs its replies itself
// (pack.go) and leaves only the rare others to this.
func (w *udpWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Write copies b: it is the packer's buffer, reused for the next reply.
func (w *udpWriter) Write(b []byte) (int, error) {
	if w.written {
		return 0, errReplied
	}
	w.wire = append(w.wire[:0], b...)
	w.written = true
	return len(b), nil
}

func (w *udpWriter) Close() error        { return nil }
func (w *udpWriter) TsigStatus() error   { return nil }
func (w *udpWriter) TsigTimersOnly(bool) {}
func (w *udpWriter) Hijack()             {}
