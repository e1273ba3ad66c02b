package checks_test

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/catalog"
)

// tcpTarget accepts and closes connections on addr until stopped.
func tcpTarget(t *testing.T, addr string) (stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { ln.Close(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func TestTCP(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := tcpTarget(t, addr)

	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "db", TCP: addr, Interval: 10 * time.Millisecond})
	i := rec.waitFor(t, "db", 0, catalog.HealthPassing, "TCP connect "+addr+": Success")
	stop()
	i = rec.waitFor(t, "db", i, catalog.HealthCritical, "connection refused")
	tcpTarget(t, addr) // back on the same port
	rec.waitFor(t, "db", i, catalog.HealthPassing, "Success")

	// Every probe is counted by type and result, for metrics.
	var passing, critical uint64
	for _, rc := range m.Runs() {
		if rc.Type != checks.TypeTCP {
			t.Errorf("Runs: got type %q, want only %q", rc.Type, checks.TypeTCP)
		}
		switch rc.Status {
		case catalog.HealthPassing:
			passing = rc.Count
		case catalog.HealthCritical:
			critical = rc.Count
		}
	}
	if passing < 2 || critical < 1 {
		t.Errorf("Runs: got %d passing and %d critical, want at least 2 and 1", passing, critical)
	}
}

// udpEcho answers every datagram on addr until stopped.
func udpEcho(t *testing.T, addr string) (stop func()) {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				pc.WriteTo(buf[:n], from)
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { pc.Close(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func TestUDP(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	stop := udpEcho(t, addr)

	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "dns", UDP: addr, Interval: 20 * time.Millisecond})
	i := rec.waitFor(t, "dns", 0, catalog.HealthPassing, "reply received")
	stop() // nobody listens: the kernel answers with ICMP port unreachable
	i = rec.waitFor(t, "dns", i, catalog.HealthCritical, "connection refused")
	udpEcho(t, addr)
	rec.waitFor(t, "dns", i, catalog.HealthPassing, "reply received")
}

// A UDP service that listens but never answers is passing once the
// Timeout passes without an ICMP error.
func TestUDPSilentIsPassing(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	m, rec := newManager(t, checks.Config{}, nil)
	mustAdd(t, m, checks.Definition{ID: "quiet", UDP: pc.LocalAddr().String(), Interval: 20 * time.Millisecond})
	rec.waitFor(t, "quiet", 0, catalog.HealthPassing, "no reply and no ICMP error")
}
