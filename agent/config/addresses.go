package config

import (
	"net"
	"strconv"
	"strings"
)

// This file holds Consul's addresses block (the address one listener
// binds to, over client_addr) and its unix_sockets block: the HTTP API
// may listen on a unix socket (addresses.http = "unix:///run/cairn.sock"),
// which only local users the file's mode, user and group let in can
// reach.

// Addresses are the addresses block.
type Addresses struct {
	// HTTP is where the plain HTTP API listens instead of client_addr
	// (addresses.http): an IP address (with ports.http), or
	// "unix://<path>" for a unix socket (ports.http then unused). Default
	// "": client_addr.
	HTTP string
}

// UnixSockets are the unix_sockets block: the owner and mode of the
// socket files the agent creates.
type UnixSockets struct {
	// User and Group are the numeric user and group IDs to give the
	// socket (unix_sockets.user, unix_sockets.group). Default "": the
	// agent's own.
	User, Group string
	// Mode is the socket's permission bits in octal (unix_sockets.mode),
	// such as "0770". Default "": as the process's umask leaves them.
	Mode string
}

// unixPrefix marks an address as a unix socket path, as Consul writes it.
const unixPrefix = "unix://"

// HTTPUnixSocket returns the path of the HTTP API's unix socket, and
// whether the API listens on one.
func (a Addresses) HTTPUnixSocket() (string, bool) {
	return strings.CutPrefix(a.HTTP, unixPrefix)
}

// HTTPListen is where the plain HTTP API listens: addr (host:port), or
// unixPath; both "" when ports.http is -1.
func (c *Config) HTTPListen() (addr, unixPath string) {
	if c.Ports.HTTP < 0 {
		return "", ""
	}
	if path, ok := c.Addresses.HTTPUnixSocket(); ok {
		return "", path
	}
	host := c.ClientAddr
	if c.Addresses.HTTP != "" {
		host = c.Addresses.HTTP
	}
	return net.JoinHostPort(host, strconv.Itoa(c.Ports.HTTP)), ""
}

// Owner returns the socket's user and group IDs, -1 for those unset.
func (u UnixSockets) Owner() (uid, gid int) {
	uid, gid = -1, -1
	if n, err := strconv.Atoi(u.User); err == nil {
		uid = n
	}
	if n, err := strconv.Atoi(u.Group); err == nil {
		gid = n
	}
	return uid, gid
}

// SocketMode returns the socket's mode bits; ok is false when Mode is
// unset.
func (u UnixSockets) SocketMode() (mode uint32, ok bool) {
	if u.Mode == "" {
		return 0, false
	}
	m, err := strconv.ParseUint(u.Mode, 8, 32)
	return uint32(m), err == nil
}

type fileAddresses struct {
	HTTP *string `hcl:"http"`
}

type fileUnixSockets struct {
	User  *string `hcl:"user"`
	Group *string `hcl:"group"`
	Mode  *string `hcl:"mode"`
}

// fileAddressKeys are the keys of this file in a config file.
type fileAddressKeys struct {
	Addresses   *fileAddresses   `hcl:"addresses"`
	UnixSockets *fileUnixSockets `hcl:"unix_sockets"`
}

func (f *fileAddressKeys) apply(c *Config) {
	if a := f.Addresses; a != nil {
		setIf(&c.Addresses.HTTP, a.HTTP)
	}
	if u := f.UnixSockets; u != nil {
		setIf(&c.UnixSockets.User, u.User)
		setIf(&c.UnixSockets.Group, u.Group)
		setIf(&c.UnixSockets.Mode, u.Mode)
	}
}

// validateAddresses reports the bad fields of this file's keys.
func (c *Config) validateAddresses(bad func(field, format string, args ...any)) {
	if h := c.Addresses.HTTP; h != "" {
		if path, ok := c.Addresses.HTTPUnixSocket(); ok {
			if path == "" {
				bad("addresses.http", "%q names no socket path: write unix:///path/to/socket", h)
			}
		} else if net.ParseIP(h) == nil {
			bad("addresses.http", "must be an IP address or unix:///path, got %q", h)
		}
	}
	if _, ok := c.UnixSockets.SocketMode(); !ok && c.UnixSockets.Mode != "" {
		bad("unix_sockets.mode", "must be octal permission bits such as \"0770\", got %q", c.UnixSockets.Mode)
	}
	for _, id := range []struct{ field, v string }{{"unix_sockets.user", c.UnixSockets.User}, {"unix_sockets.group", c.UnixSockets.Group}} {
		if _, err := strconv.Atoi(id.v); id.v != "" && err != nil {
			bad(id.field, "must be a numeric ID, got %q", id.v)
		}
	}
}
