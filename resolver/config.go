package resolver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/miekg/dns"
)

// Config configures a Server.
type Config struct {
	// Addr is the host:port the server listens on, for both UDP and TCP.
	// With port 0 a free port is picked, the same for both.
	// Default "127.0.0.1:8600".
	Addr string
	// UDPSize is the largest UDP reply sent to a client that advertises
	// a larger EDNS0 buffer, and the size the server advertises in its own
	// OPT record. Default 1232, as DNS Flag Day 2020 recommends to avoid
	// IP fragmentation. At least 512.
	UDPSize uint16
	// ReadTimeout bounds reading a query from a TCP connection.
	// Default 2s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a reply. Default 2s.
	WriteTimeout time.Duration
	// QueryTimeout bounds the Source calls answering one question; a
	// question not answered in time gets SERVFAIL. Default 2s.
	QueryTimeout time.Duration
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Addr:         "127.0.0.1:8600", // Consul's DNS port, local only
		UDPSize:      1232,             // DNS Flag Day 2020
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		QueryTimeout: 2 * time.Second,
	}
}

// Validate reports every invalid field of c, each error naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("resolver: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		bad("Addr", "%q is not host:port: %v", c.Addr, err)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		bad("Addr", "%q: port %q is not a number between 0 and 65535", c.Addr, port)
	}
	if c.UDPSize < dns.MinMsgSize {
		bad("UDPSize", "must be at least %d, got %d", dns.MinMsgSize, c.UDPSize)
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"ReadTimeout", c.ReadTimeout}, {"WriteTimeout", c.WriteTimeout}, {"QueryTimeout", c.QueryTimeout}} {
		if d.d <= 0 {
			bad(d.field, "must be positive, got %s", d.d)
		}
	}
	return errors.Join(errs...)
}
