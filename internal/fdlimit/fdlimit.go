// Package fdlimit raises the process's limit on open files and suggests
// how many connections the agent's listeners may hold within it.
//
// Every TCP connection the agent holds (HTTP clients, DNS over TCP, RPC
// and Raft peers, gossip streams) and every file it opens takes a file
// descriptor. Once the process is out of them, accept fails ("too many
// open files") on every listener at once, so a flood of HTTP connections
// would take DNS over TCP down too. The agent raises its soft limit to
// the hard one at start (Raise), then caps what its listeners may hold
// (ConnBudget) so that the rest keep a reserve.
//
// It is used by the agent at start only; it has no state.
package fdlimit

import "errors"

// ErrUnsupported is wrapped by Raise's error on a platform where the limit
// is not read or changed (anything but Linux).
var ErrUnsupported = errors.New("fdlimit: not supported on this platform")

// Reserve bounds: the file descriptors ConnBudget keeps out of the
// listeners' budget for everything else (UDP sockets, Raft and gossip
// connections, the data directory's files, outgoing RPC): a fifth of the
// limit, and at least MinReserve.
const (
	MinReserve     = 256
	ReserveDivisor = 5
)

// Unlimited is the limit reported when there is none (RLIM_INFINITY).
const Unlimited = ^uint64(0)

// ConnBudget returns how many connections the agent's listeners (HTTP and
// DNS over TCP together) may hold open under a limit of limit open files:
// the limit less a reserve of a fifth of it, at least MinReserve; under a
// limit of 2*MinReserve or less, half of it. An unlimited limit gives 0,
// which the listeners' configs read as "no cap".
func ConnBudget(limit uint64) uint64 {
	switch {
	case limit == Unlimited:
		return 0
	case limit <= 2*MinReserve:
		return limit / 2
	}
	return limit - max(limit/ReserveDivisor, MinReserve)
}

// HTTPConns raises the limit (Raise) and returns how many HTTP connections
// fit in ConnBudget once DNS over TCP has its tcpConns, at least 64; 0 (no
// cap) when the limit is unknown or there is none.
func HTTPConns(tcpConns int) int {
	soft, _, err := Raise()
	if err != nil {
		return 0 // the per-client cap still applies
	}
	total := ConnBudget(soft)
	if total == 0 {
		return 0
	}
	return max(int(total)-tcpConns, 64)
}
