package e2etest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"syscall"
	"testing"

	"github.com/cairndns/cairn/internal/porttest"
)

// Ports are the five ports of an agent.
type Ports struct {
	DNS, HTTP, Server, SerfLAN, SerfWAN int
}

// LoopbackNet is where a test puts a cluster of agent processes: a
// loopback address of its own for each agent and the same five ports on
// every address, as on a network of hosts. They are picked per run, so
// that parallel tests, two runs on one host, or a cairn or Consul agent
// holding the default ports, do not collide.
type LoopbackNet struct {
	Names []string          // the agents, in the order given
	IP    map[string]string // agent name → address
	Ports Ports
}

// NewLoopbackNet picks consecutive addresses for the named agents in a
// random 127.a.b.0/24 (a ≠ 0: 127.0.x.x is where other services live) and
// five ports that porttest has found free on 127.0.0.1 (so no wildcard
// listener holds them either), and checks that every port is free for TCP
// and UDP on every address. A block where one is taken is passed over.
func NewLoopbackNet(tb testing.TB, names ...string) LoopbackNet {
	tb.Helper()
	for range 20 {
		a, b := 1+rand.IntN(254), rand.IntN(256)
		first := 1 + rand.IntN(255-len(names)) // hosts first … first+len-1 within 1…254
		n := LoopbackNet{Names: names, IP: make(map[string]string, len(names)),
			Ports: Ports{DNS: porttest.Free(tb), HTTP: porttest.Free(tb), Server: porttest.Free(tb),
				SerfLAN: porttest.Free(tb), SerfWAN: porttest.Free(tb)}}
		for i, name := range names {
			n.IP[name] = fmt.Sprintf("127.%d.%d.%d", a, b, first+i)
		}
		if n.free(tb) {
			return n
		}
	}
	tb.Fatal("found no block of loopback addresses with the ports free in 20 tries")
	return LoopbackNet{}
}

// free reports whether every port of n is free for TCP and UDP on every
// address of n. An address that cannot be bound at all fails the test:
// the clusters need the whole of 127.0.0.0/8 on the loopback interface,
// as Linux has it.
func (n LoopbackNet) free(tb testing.TB) bool {
	tb.Helper()
	p := n.Ports
	for _, name := range n.Names {
		for _, port := range []int{p.DNS, p.HTTP, p.Server, p.SerfLAN, p.SerfWAN} {
			addr := net.JoinHostPort(n.IP[name], strconv.Itoa(port))
			ln, err := net.Listen("tcp", addr)
			if err == nil {
				ln.Close()
				var pc net.PacketConn
				if pc, err = net.ListenPacket("udp", addr); err == nil {
					pc.Close()
				}
			}
			switch {
			case errors.Is(err, syscall.EADDRINUSE):
				return false
			case err != nil:
				tb.Fatalf("bind %s for an agent: %v", addr, err)
			}
		}
	}
	return true
}
