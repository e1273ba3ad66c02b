// Package porttest hands tests loopback ports to give to agents before
// they start (peers must know a server's and a gossip port in advance).
package porttest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// Refused returns a 127.0.0.1 TCP address that refuses every connection
// until the test ends. Its port is bound but never listened on: closing a
// listener instead would hand the port back to the kernel, which can give
// it to the next listener bound to port 0, a parallel test's agent
// answering where this test expects a refusal.
func Refused(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatalf("porttest: socket: %v", err)
	}
	tb.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("porttest: bind 127.0.0.1:0: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("porttest: getsockname: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		tb.Fatalf("porttest: bound address is %T, want IPv4", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port))
}

// ListeningTCP returns the TCP ports listening on exactly the IPv4
// address ip (not the wildcard), by any process, sorted, as Linux lists
// them in /proc/net/tcp. It skips the test where there is no such file:
// asking the kernel is the only way to see every listener, including
// one the test would not know to dial.
func ListeningTCP(tb testing.TB, ip netip.Addr) []int {
	tb.Helper()
	data, err := os.ReadFile("/proc/net/tcp")
	if errors.Is(err, os.ErrNotExist) {
		tb.Skip("porttest: no /proc/net/tcp to list listeners from (not Linux)")
	}
	if err != nil {
		tb.Fatalf("porttest: %v", err)
	}
	if !ip.Is4() {
		tb.Fatalf("porttest: ListeningTCP takes an IPv4 address, got %s", ip)
	}
	// The kernel prints the address's bytes read as a host-order word.
	a := ip.As4()
	want := fmt.Sprintf("%08X", binary.NativeEndian.Uint32(a[:]))
	var ports []int
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		addr, port, ok := strings.Cut(f[1], ":")
		if !ok || addr != want {
			continue
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			tb.Fatalf("porttest: /proc/net/tcp: bad port in %q", f[1])
		}
		ports = append(ports, int(p))
	}
	slices.Sort(ports)
	return ports
}
