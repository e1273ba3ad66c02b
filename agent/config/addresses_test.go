package config

import (
	"strings"
	"testing"
)

// TestAddressesBlock: addresses.http takes an IP address or a unix
// socket, with the socket's owner and mode in unix_sockets; a bad value
// is refused naming its key.
func TestAddressesBlock(t *testing.T) {
	t.Parallel()
	c := validConfig()
	file := `{"addresses": {"http": "unix:///run/cairn/http.sock"}, "unix_sockets": {"mode": "0660", "user": "1000", "group": "100"}}`
	if err := LoadFile(writeConfig(t, "a.json", file), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if addr, path := c.HTTPListen(); addr != "" || path != "/run/cairn/http.sock" {
		t.Errorf("HTTPListen: got %q %q, want the socket", addr, path)
	}
	if mode, ok := c.UnixSockets.SocketMode(); !ok || mode != 0o660 {
		t.Errorf("mode: got %o %v, want 0660", mode, ok)
	}
	if uid, gid := c.UnixSockets.Owner(); uid != 1000 || gid != 100 {
		t.Errorf("owner: got %d:%d, want 1000:100", uid, gid)
	}
	c.Addresses.HTTP, c.Ports.HTTP = "10.0.0.1", 8500
	if addr, path := c.HTTPListen(); addr != "10.0.0.1:8500" || path != "" {
		t.Errorf("HTTPListen with an IP: got %q %q", addr, path)
	}
	for _, tc := range []struct{ field, file string }{
		{"addresses.http", `addresses { http = "unix://" }`},
		{"addresses.http", `addresses { http = "localhost" }`},
		{"unix_sockets.mode", `unix_sockets { mode = "rw" }`},
		{"unix_sockets.user", `unix_sockets { user = "root" }`},
	} {
		c := validConfig()
		if err := LoadFile(writeConfig(t, "bad.hcl", tc.file), &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an error naming %s", tc.file, err, tc.field)
		}
	}
}
