package e2e

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// delayRelay stands in for a netem-delayed link, which the kernels the
// tests run on lack (no sch_netem, no loadable modules; of the qdiscs
// they have, tbf and htb delay only by rate-limiting, so a small packet
// such as a gossip probe goes through at once). It listens on one UDP
// address and forwards each datagram to another after holding it for the
// relay's delay. Replies from the target come back through the relay at
// once, so the delay is one-way.
//
// In front of a node's gossip port it delays everything the node
// receives: a probe's round trip between two nodes then costs the delays
// of both, since memberlist sends the ack to the address the ping names,
// not back through the relay. Only UDP is relayed: memberlist measures
// round trips over UDP, and uses TCP for joins and state exchange, whose
// latency the tests do not look at.
type delayRelay struct {
	target netip.AddrPort
	delay  atomic.Int64 // a time.Duration; SetDelay changes it in flight
	conn   *net.UDPConn
	queue  chan heldDatagram // read by sendLoop, in arrival order
	done   chan struct{}     // closed by Close
	wg     sync.WaitGroup    // every goroutine of the relay

	mu       sync.Mutex
	closed   bool
	upstream map[netip.AddrPort]*net.UDPConn // per client, so that replies find their way back
}

// heldDatagram is a datagram waiting to be sent upstream at due.
type heldDatagram struct {
	conn    *net.UDPConn
	payload []byte
	due     time.Time
}

// relayQueueLen bounds the datagrams in flight; beyond it the relay drops,
// as a full link queue would.
const relayQueueLen = 4096

// newDelayRelay listens on listen and forwards to target, delaying by
// delay, until Close.
func newDelayRelay(listen, target netip.AddrPort, delay time.Duration) (*delayRelay, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(listen))
	if err != nil {
		return nil, err
	}
	r := &delayRelay{
		target:   target,
		conn:     conn,
		queue:    make(chan heldDatagram, relayQueueLen),
		done:     make(chan struct{}),
		upstream: map[netip.AddrPort]*net.UDPConn{},
	}
	r.SetDelay(delay)
	r.wg.Go(r.readLoop)
	r.wg.Go(r.sendLoop)
	return r, nil
}

// SetDelay changes the delay of the datagrams arriving from now on.
func (r *delayRelay) SetDelay(d time.Duration) { r.delay.Store(int64(d)) }

// Close stops the relay and waits for its goroutines. Datagrams still
// held are dropped.
func (r *delayRelay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	upstream := r.upstream
	r.upstream = nil
	r.mu.Unlock()

	close(r.done)
	r.conn.Close()
	for _, c := range upstream {
		c.Close()
	}
	r.wg.Wait()
}

// readLoop stamps each datagram with the time it is due upstream and
// queues it.
func (r *delayRelay) readLoop() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return // closed: the only error of an unconnected socket here
		}
		up, ok := r.upstreamFor(from)
		if !ok {
			return
		}
		if up == nil {
			continue
		}
		d := heldDatagram{conn: up, payload: append([]byte(nil), buf[:n]...),
			due: time.Now().Add(time.Duration(r.delay.Load()))}
		select {
		case r.queue <- d:
		default: // the queue is full: dropped
		}
	}
}

// upstreamFor returns the socket that forwards the datagrams of from,
// creating it and the goroutine relaying its replies the first time; nil
// if it cannot be created (the datagram is lost), and false once the
// relay is closing. Only readLoop calls it.
func (r *delayRelay) upstreamFor(from netip.AddrPort) (*net.UDPConn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false
	}
	if up := r.upstream[from]; up != nil {
		return up, true
	}
	up, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(r.target))
	if err != nil {
		return nil, true
	}
	r.upstream[from] = up
	r.wg.Go(func() { r.replyLoop(up, from) })
	return up, true
}

// replyLoop sends what the target answers on up back to the client from,
// at once.
func (r *delayRelay) replyLoop(up *net.UDPConn, from netip.AddrPort) {
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		switch {
		case errors.Is(err, net.ErrClosed):
			return
		case err != nil:
			// A connected UDP socket reports an earlier datagram's ICMP
			// error here (port unreachable while the target starts); the
			// socket itself is fine.
			continue
		}
		_, _ = r.conn.WriteToUDPAddrPort(buf[:n], from) // lost, as on a link, if it fails
	}
}

// sendLoop sends the queued datagrams upstream, each when it is due. The
// queue is in arrival order and, while the delay does not change, in due
// order too; after a change a datagram may wait for an earlier one, as
// behind a slower link.
func (r *delayRelay) sendLoop() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var d heldDatagram
		select {
		case <-r.done:
			return
		case d = <-r.queue:
		}
		if wait := time.Until(d.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-r.done:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		_, _ = d.conn.Write(d.payload) // lost, as on a link, if it fails
	}
}
