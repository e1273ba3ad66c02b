package rpc

import (
	"math"
	"net"
	"sync"
	"time"
)

// This file holds the write rate limit of the server port: a token
// bucket per client IP address (ServerConfig.WriteRate, WriteBurst).
// Buckets are kept only while they matter: one untouched long enough to
// have refilled is the same as no bucket, and is dropped.

// maxBuckets caps the buckets a server keeps. Past it, a bucket of another
// address is dropped to make room, which lets that address burst again:
// only a client holding writes from more addresses than this at once
// gains anything, and memory stays bounded whatever arrives.
const maxBuckets = 1 << 16

// writeLimiter is a token bucket per key (a client's IP address). Its
// methods may be called from any goroutine.
type writeLimiter struct {
	rate  float64       // tokens added per second
	burst float64       // a bucket's capacity
	full  time.Duration // how long an empty bucket takes to refill
	sweep time.Duration // how often full buckets are dropped

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time // when tokens was last brought up to date
}

// newWriteLimiter returns a limiter of rate writes a second with bursts
// of burst, or nil for rate 0 (no limit).
func newWriteLimiter(rate float64, burst int) *writeLimiter {
	if rate <= 0 {
		return nil
	}
	full := time.Duration(math.MaxInt64) // a rate so low that buckets never refill in a Duration
	if secs := float64(burst) / rate; secs < float64(math.MaxInt64/time.Second) {
		full = time.Duration(secs * float64(time.Second))
	}
	return &writeLimiter{
		rate:  rate,
		burst: float64(burst),
		full:  full,
		// Dropping buckets walks them all: not more often than once a
		// second, however fast they refill.
		sweep:   max(full, time.Second),
		buckets: make(map[string]*bucket),
	}
}

// allow takes a token of key's bucket at now, and reports whether there
// was one.
func (l *writeLimiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= l.sweep {
		l.dropFull(now)
		l.lastSweep = now
	}
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			for k := range l.buckets { // any one: see maxBuckets
				delete(l.buckets, k)
				break
			}
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+elapsed.Seconds()*l.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// dropFull drops the buckets that have refilled by now.
func (l *writeLimiter) dropFull(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.last) >= l.full {
			delete(l.buckets, k)
		}
	}
}

// allowWrite reports whether a write from remote may run now: always
// without a limit, without an address (an in-memory connection) or for an
// exempt address; otherwise when remote's IP has a token left.
func (s *Server) allowWrite(remote net.Addr) bool {
	if s.writes == nil || remote == nil {
		return true
	}
	if s.cfg.Forwarder != nil && s.cfg.Forwarder(remote) {
		return true
	}
	return s.writes.allow(hostOf(remote), time.Now())
}

// hostOf returns the IP (or host) of addr, without the port: the clients
// of one machine share a bucket whatever port they dial from.
func hostOf(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap().String()
	}
	s := addr.String()
	if host, _, err := net.SplitHostPort(s); err == nil {
		return host
	}
	return s
}
