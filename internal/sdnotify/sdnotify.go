// Package sdnotify tells systemd how a Type=notify service is doing, by
// the sd_notify(3) protocol: one datagram of "KEY=value" lines to the
// unix socket systemd names in $NOTIFY_SOCKET. The agent says READY=1
// once its listeners are up, RELOADING=1 then READY=1 around a SIGHUP
// reload, and STOPPING=1 when it starts shutting down, so that
// `systemctl start` returns when cairn answers and dependent units wait
// for it. Not started by systemd (no $NOTIFY_SOCKET), it does nothing.
//
// Written by hand rather than taken from go-systemd: the protocol is one
// sendto, and the agent needs nothing else of that library.
package sdnotify

import (
	"fmt"
	"log/slog"
	"net"
	"os"
)

// The states the agent sends (sd_notify(3)).
const (
	Ready     = "READY=1"
	Reloading = "RELOADING=1"
	Stopping  = "STOPPING=1"
)

// SocketEnv is the variable systemd sets to the socket's path ("@name"
// for an abstract socket).
const SocketEnv = "NOTIFY_SOCKET"

// Notifier sends states to one socket. A nil *Notifier sends nothing, so
// callers need no check of whether systemd is there.
type Notifier struct {
	addr   *net.UnixAddr
	logger *slog.Logger
}

// FromEnv returns a Notifier for $NOTIFY_SOCKET, or nil when it is unset.
func FromEnv(logger *slog.Logger) *Notifier {
	return New(os.Getenv(SocketEnv), logger)
}

// New returns a Notifier for socket, or nil when socket is empty. A
// failed send is logged to logger: systemd then times the start out or
// the service keeps running unannounced, neither a reason to stop.
func New(socket string, logger *slog.Logger) *Notifier {
	if socket == "" {
		return nil
	}
	// Go's net package turns a leading "@" into the NUL of an abstract
	// socket address, as systemd means it.
	return &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}, logger: logger}
}

// Notify sends state, one or more "KEY=value" lines, and logs a failure.
func (n *Notifier) Notify(state string) {
	if n == nil {
		return
	}
	if err := n.Send(state); err != nil {
		n.logger.Warn("could not tell systemd the service's state", "state", state, "err", err)
	}
}

// Send sends state as one datagram and returns what went wrong.
func (n *Notifier) Send(state string) error {
	if n == nil {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", n.addr.Name, err)
	}
	return nil
}
