// Package resolvertest holds helpers for testing DNS handlers without
// sockets. It is imported by tests only.
package resolvertest

import (
	"net"

	"github.com/miekg/dns"
)

// Recorder is a dns.ResponseWriter that records what a handler writes
// instead of sending it. It packs each message as the server would, so a
// test sees the reply as it would have gone out (truncation, compression,
// the extended rcode in the OPT record). It is not safe for concurrent use.
type Recorder struct {
	Local  net.Addr // the server's address
	Remote net.Addr // the client's: a *net.TCPAddr makes the handler treat the query as TCP
	Msg    *dns.Msg // the last message written: as the handler built it (WriteMsg), or Wire unpacked (Write)
	Wire   []byte   // Msg packed (WriteMsg), or a copy of the bytes given to Write
	Writes int      // how many messages were written
	Closed bool     // whether Close was called
}

var _ dns.ResponseWriter = (*Recorder)(nil)

// NewRecorder returns a Recorder for a query that came over network,
// "udp" or "tcp", from 127.0.0.1:40000 to 127.0.0.1:8600.
func NewRecorder(network string) *Recorder {
	ip := net.IPv4(127, 0, 0, 1)
	if network == "tcp" {
		return &Recorder{Local: &net.TCPAddr{IP: ip, Port: 8600}, Remote: &net.TCPAddr{IP: ip, Port: 40000}}
	}
	return &Recorder{Local: &net.UDPAddr{IP: ip, Port: 8600}, Remote: &net.UDPAddr{IP: ip, Port: 40000}}
}

// Reset forgets what was written, keeping the addresses.
func (r *Recorder) Reset() { r.Msg, r.Wire, r.Writes, r.Closed = nil, nil, 0, false }

// LocalAddr returns Local.
func (r *Recorder) LocalAddr() net.Addr { return r.Local }

// RemoteAddr returns Remote.
func (r *Recorder) RemoteAddr() net.Addr { return r.Remote }

// WriteMsg records m and packs it into Wire, returning the packing error.
func (r *Recorder) WriteMsg(m *dns.Msg) error {
	r.Writes++
	r.Msg = m
	var err error
	r.Wire, err = m.Pack()
	return err
}

// Write records a copy of b (a handler may reuse b once Write returns),
// unpacked into Msg.
func (r *Recorder) Write(b []byte) (int, error) {
	r.Writes++
	r.Wire = append([]byte(nil), b...)
	r.Msg = new(dns.Msg)
	if err := r.Msg.Unpack(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close records that the connection was closed.
func (r *Recorder) Close() error { r.Closed = true; return nil }

// TsigStatus reports no TSIG error.
func (r *Recorder) TsigStatus() error { return nil }

// TsigTimersOnly does nothing.
func (r *Recorder) TsigTimersOnly(bool) {}

// Hijack does nothing.
func (r *Recorder) Hijack() {}

// Reply returns the recorded reply as a client would receive it: Wire
// unpacked.
func (r *Recorder) Reply() (*dns.Msg, error) {
	m := new(dns.Msg)
	if err := m.Unpack(r.Wire); err != nil {
		return nil, err
	}
	return m, nil
}

// Sink is a dns.ResponseWriter that keeps no more of a reply than a
// socket would: its size. WriteMsg packs the message, as miekg/dns's
// writers do. Benchmarks and allocation tests use it to count the
// handler's work alone, where a Recorder would add its copy and unpack.
// It is not safe for concurrent use.
type Sink struct {
	Local  net.Addr // the server's address
	Remote net.Addr // the client's: a *net.TCPAddr makes the handler treat the query as TCP
	Writes int      // how many messages were written
	Size   int      // the size of the last one, packed
}

var _ dns.ResponseWriter = (*Sink)(nil)

// NewSink returns a Sink for a query that came over network, "udp" or
// "tcp", with the addresses of NewRecorder's.
func NewSink(network string) *Sink {
	r := NewRecorder(network)
	return &Sink{Local: r.Local, Remote: r.Remote}
}

// LocalAddr returns Local.
func (s *Sink) LocalAddr() net.Addr { return s.Local }

// RemoteAddr returns Remote.
func (s *Sink) RemoteAddr() net.Addr { return s.Remote }

// WriteMsg packs m and records its size, returning the packing error.
func (s *Sink) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	s.Writes++
	s.Size = len(b)
	return err
}

// Write records the size of b.
func (s *Sink) Write(b []byte) (int, error) {
	s.Writes++
	s.Size = len(b)
	return len(b), nil
}

// Close does nothing.
func (s *Sink) Close() error { return nil }

// TsigStatus reports no TSIG error.
func (s *Sink) TsigStatus() error { return nil }

// TsigTimersOnly does nothing.
func (s *Sink) TsigTimersOnly(bool) {}

// Hijack does nothing.
func (s *Sink) Hijack() {}
