// Package porttest hands tests loopback ports to give to agents before
// they start (peers must know a server's and a gossip port in advance).
package porttest

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The ports are drawn below Linux's default ephemeral range (32768–60999),
// so that no listener bound to port 0 (an agent's RPC or gossip port in a
// test that needs no fixed one, or any outgoing connection) can be given a
// port handed out here between the moment it was found free and the moment
// its agent binds it.
const (
	lowest  = 20000
	highest = 32767
)

var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// Free returns a port of 127.0.0.1 free for both TCP and UDP (an agent's
// DNS and gossip bind both on one port) a moment ago and never returned
// before in this process. Another process could still take it in between,
// which the random draw makes rare.
func Free(tb testing.TB) int {
	tb.Helper()
	for range 200 {
		port := lowest + rand.IntN(highest-lowest+1)
		handedOut.Lock()
		taken := handedOut.ports[port]
		handedOut.Unlock()
		if taken || !free(port) {
			continue
		}
		handedOut.Lock()
		if handedOut.ports == nil {
			handedOut.ports = make(map[int]bool)
		}
		taken = handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if !taken {
			return port
		}
	}
	tb.Fatal("porttest: no loopback port free for both TCP and UDP in 200 tries")
	return 0
}

// free reports whether port can be bound on 127.0.0.1 for TCP and UDP.
func free(port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	_ = u.Close()
	return true
}
