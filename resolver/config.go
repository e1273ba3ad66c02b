package resolver

import (
	"crypto/tls"
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
	// TLSAddr is the host:port of DNS over TLS (RFC 7858): the TCP
	// protocol, each message prefixed by its length, inside TLS, served
	// by the same handler. Its connections count against MaxTCPConns and
	// close after TCPIdleTimeout, as plain TCP ones. With port 0 a free
	// port is picked. Default "": not served.
	TLSAddr string
	// TLS is the server side of DNS over TLS: its certificate, and any
	// client certificates it demands. Required with TLSAddr. Default nil.
	TLS *tls.Config
	// UDPSize is both the EDNS0 buffer size the server advertises in its
	// own OPT record and the cap on the size of a UDP reply: a client
	// advertising a larger buffer still gets at most UDPSize bytes (the
	// rest cut, with TC set), one advertising none at most 512. It is
	// also the size advertised to recursors for a client that sent no
	// OPT record. Default 1232, as DNS Flag Day 2020 recommends to avoid
	// IP fragmentation. At least 512.
	UDPSize uint16
	// UDPAnswerLimit caps the number of answer records of a reply over
	// UDP, as Consul's udp_answer_limit does; 0 means no cap. The cap is
	// applied to the shuffled answers, so clients get different subsets,
	// and does not set TC: it is a policy, not a lack of room (replies
	// are cut to the client's size anyway). Forwarded answers are not
	// capped. Default 0; at least 0.
	UDPAnswerLimit int
	// ARecordLimit caps the number of A and AAAA records (together) in
	// the answer section over any transport, as Consul's a_record_limit
	// does; 0 means no cap. Applied like UDPAnswerLimit. Default 0; at
	// least 0.
	ARecordLimit int
	// ReadTimeout bounds reading a query from a TCP connection.
	// Default 2s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a reply over TCP; a UDP reply is handed
	// to the kernel, which sends it or drops it. Default 2s.
	WriteTimeout time.Duration
	// QueryTimeout bounds the Source calls answering one question; a
	// question not answered in time gets SERVFAIL. Default 2s.
	QueryTimeout time.Duration
	// TCPIdleTimeout is how long a TCP connection may sit idle after an
	// answer before the server closes it, so a slow or idle client cannot
	// hold a connection; the first query must arrive within ReadTimeout.
	// A connection carries any number of queries, pipelined (RFC 7766).
	// Default 10s.
	TCPIdleTimeout time.Duration

	// Recursors are the servers that questions about names outside
	// cairn's domains are forwarded to, each an IP address with an
	// optional port (default 53): "10.0.0.2", "10.0.0.2:5353",
	// "[2001:db8::1]:53". With none, such questions are refused: cairn is
	// never an open recursor. Default none.
	Recursors []string
	// RecursorTimeout bounds asking one recursor, a UDP try and a TCP
	// retry of a truncated reply together; a recursor that has not
	// answered by then is passed over for the next. Default 2s.
	RecursorTimeout time.Duration
	// RecursorStrategy is the order recursors are asked in:
	// RecursorSequential ("sequential", the configured order) or
	// RecursorRandom ("random": a random one first, then the others in
	// order). Default "sequential".
	RecursorStrategy string
	// UnhealthyAnswer says how a service that exists but has no healthy
	// instance is answered: UnhealthyNoData (the default: NOERROR, no
	// records, the SOA — the name exists), UnhealthyNXDomain (Consul's
	// behaviour) or UnhealthyAll (fail open: every instance is given out).
	UnhealthyAnswer string
	// SetTC sets the TC bit on a UDP reply that had records left out to
	// fit, so the client asks again over TCP (RFC 2181 9). Without it the
	// client gets what fits and no hint. Default true.
	SetTC bool
	// MaxTCPConns caps the TCP connections served at once: one more is
	// closed as soon as it is accepted, so that clients holding
	// connections cannot take every file descriptor of the process. UDP
	// is not affected. 0 means no cap. Default 512: a stub resolver opens
	// a connection only to retry a truncated answer and closes it (or the
	// server does after TCPIdleTimeout), so a few dozen are open at once
	// even on a busy agent; 512 is ten times that, and few enough to
	// leave the file descriptors of the default soft limit of 1024 to the
	// rest of the agent.
	MaxTCPConns int
	// MaxTCPConnsPerClient caps the TCP connections (DNS over TLS ones
	// included) one client holds at once, a client being an IPv4 address
	// or an IPv6 /64: one more is closed as soon as it is accepted, so
	// that one address cannot take every place MaxTCPConns leaves and
	// lock the others out of TCP, which is where truncated answers send
	// them. 0 means no cap. Default 64: a stub resolver's connections are
	// those of its truncated answers in flight, and a forwarding resolver
	// keeps a handful per thread (Unbound's outgoing-num-tcp is 10), so
	// even every application of a node asking through 127.0.0.1 stays
	// well under it, while it takes eight addresses to fill MaxTCPConns.
	MaxTCPConnsPerClient int
	// UDPSockets is how many UDP sockets serve Addr, each read by its own
	// goroutines: on Linux they share the address (SO_REUSEPORT) and the
	// kernel spreads the clients over them, so that every core answers.
	// 0 means one per core (GOMAXPROCS) on Linux; elsewhere there is
	// always one. Default 0; at least 0.
	UDPSockets int
	// Cookies answers DNS Cookies (RFC 7873; server cookies made as RFC
	// 9018 says) and makes a valid server cookie the proof of address a
	// client needs to be sent a UDP reply larger than 512 bytes (up to
	// UDPSize) and to be passed over by RRL: a client without one gets at
	// most 512 bytes, the rest cut with TC set, and asks again over TCP
	// (cookie.go). A malformed COOKIE option is answered FORMERR. Off,
	// COOKIE options are ignored and every client gets up to UDPSize.
	// Default true.
	Cookies bool
	// CookieSecret is the key server cookies are made with, 16 bytes.
	// Agents answering for one address (anycast) must share it, so that
	// each accepts the cookies the others made. Default none: a random
	// one is made by New, and cookies last until the process restarts
	// (a client then gets a fresh one with its next answer).
	CookieSecret []byte
	// RRL is response-rate limiting of UDP replies (rrl.go). Default on.
	RRL RRLConfig
	// DNSSEC is the online signing of the zones' answers (dnssec.go).
	// Default off.
	DNSSEC DNSSECConfig
}

// RRLConfig configures response-rate limiting, as BIND's rate-limit: a
// client network (a prefix of the source address) may be sent at most
// ResponsesPerSecond UDP replies per second that are alike (the same
// answer, name and type; any name error; or any other error), and at
// most AllPerSecond in all. A reply over a rate is dropped, except every
// Slip-th, which is sent truncated and empty so that a real client asks
// again over TCP, which is never limited. It keeps the agent from being
// used to flood the address a spoofed query names, while a client behind
// that address can still get its answers.
//
// Only replies that amplify are counted (rrl.go): those more than
// MinAmplification times the size of their query, to a client that did
// not prove its address with a server cookie (Config.Cookies). A stub
// resolver asking for small answers, or one sending cookies, is never
// limited; one without cookies asking for large answers faster than the
// rates gets TC and its answer over TCP. With the defaults, a spoofed
// source sending 1,000 queries a second has the victim sent at most
// about twice the bytes it sends (replies are at most 512 bytes without
// a cookie; 100 a second of them, the rest truncated replies the size of
// the query).
type RRLConfig struct {
	// Enabled turns it on. Default true.
	Enabled bool
	// ResponsesPerSecond is the rate of alike replies a client network
	// is sent, and as many may be sent at once (a burst of one second's
	// worth). Default 100 (BIND suggests 5-20 for an authoritative server
	// behind caching resolvers; cairn's answers have TTL 0 by default, so
	// a resolver in front of it asks as often as its clients do). At
	// least 1 when Enabled.
	ResponsesPerSecond int
	// AllPerSecond is the rate of all the replies counted that a client
	// network is sent, as BIND's all-per-second, so that asking for many
	// names does not multiply ResponsesPerSecond; 0 means no such limit.
	// Default 100.
	AllPerSecond int
	// MinAmplification is how many times the size of its query a reply
	// may be and not be counted; 0 counts every reply, as BIND does.
	// Default 3: a reply at most 3 times its query cannot be used to
	// flood anyone with much more than the attacker sends itself.
	MinAmplification int
	// Slip makes every Slip-th limited reply go out truncated (TC set, no
	// records) rather than not at all; 0 drops them all, 1 truncates them
	// all. Default 1: a stub resolver that is limited gets TC and asks
	// again over TCP at once, where a dropped reply would keep it waiting
	// for its timeout (5s for glibc); a truncated reply is about the size
	// of its query, so amplifies nothing. At most 10.
	Slip int
	// IPv4PrefixLength and IPv6PrefixLength are the lengths of the
	// prefixes of source addresses counted as one client: one network
	// rather than one address, since a flood spoofs addresses of the
	// victim's network as readily as the victim's own. Defaults 24 and 56,
	// as BIND's.
	IPv4PrefixLength int
	IPv6PrefixLength int
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Addr:         "127.0.0.1:8600", // Consul's DNS port, local only
		UDPSize:      1232,             // DNS Flag Day 2020
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		QueryTimeout: 2 * time.Second,
		// UDPAnswerLimit and ARecordLimit: 0, no cap; replies are cut
		// to the client's size anyway.
		TCPIdleTimeout:   10 * time.Second, // a little over miekg/dns's 8s (RFC 7766 asks for seconds, not minutes)
		RecursorTimeout:  2 * time.Second,
		RecursorStrategy: RecursorSequential, // Consul's default
		UnhealthyAnswer:  UnhealthyNoData,
		SetTC:            true,
		Cookies:          true, // see Config.Cookies
		// CookieSecret: none, a random one per process.
		MaxTCPConns:          512, // see Config.MaxTCPConns
		MaxTCPConnsPerClient: 64,  // see Config.MaxTCPConnsPerClient
		// UDPSockets: 0, one per core on Linux.
		RRL: RRLConfig{
			Enabled:            true,
			ResponsesPerSecond: 100, // see RRLConfig.ResponsesPerSecond
			AllPerSecond:       100, // see RRLConfig.AllPerSecond
			MinAmplification:   3,   // see RRLConfig.MinAmplification
			Slip:               1,   // see RRLConfig.Slip
			IPv4PrefixLength:   24,  // BIND's
			IPv6PrefixLength:   56,  // BIND's
		},
		DNSSEC: DNSSECConfig{
			// Enabled: false, signing is opt-in.
			SignatureValidity: time.Hour, // see DNSSECConfig.SignatureValidity
		},
		// Recursors: none, so outside names are refused.
		// TLSAddr: "", no DNS over TLS.
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
	if c.TLSAddr != "" {
		if _, port, err := net.SplitHostPort(c.TLSAddr); err != nil {
			bad("TLSAddr", "%q is not host:port: %v", c.TLSAddr, err)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			bad("TLSAddr", "%q: port %q is not a number between 0 and 65535", c.TLSAddr, port)
		}
		if c.TLS == nil {
			bad("TLS", "DNS over TLS on %s needs a certificate", c.TLSAddr)
		}
	}
	if c.UDPSize < dns.MinMsgSize {
		bad("UDPSize", "must be at least %d, got %d", dns.MinMsgSize, c.UDPSize)
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"ReadTimeout", c.ReadTimeout}, {"WriteTimeout", c.WriteTimeout}, {"QueryTimeout", c.QueryTimeout},
		{"TCPIdleTimeout", c.TCPIdleTimeout}, {"RecursorTimeout", c.RecursorTimeout}} {
		if d.d <= 0 {
			bad(d.field, "must be positive, got %s", d.d)
		}
	}
	if c.UDPAnswerLimit < 0 {
		bad("UDPAnswerLimit", "must be 0 (no cap) or more, got %d", c.UDPAnswerLimit)
	}
	if c.ARecordLimit < 0 {
		bad("ARecordLimit", "must be 0 (no cap) or more, got %d", c.ARecordLimit)
	}
	for i, r := range c.Recursors {
		if _, err := RecursorAddr(r); err != nil {
			bad("Recursors["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
	switch c.UnhealthyAnswer {
	case UnhealthyNoData, UnhealthyNXDomain, UnhealthyAll:
	default:
		bad("UnhealthyAnswer", "must be %q, %q or %q, got %q", UnhealthyNoData, UnhealthyNXDomain, UnhealthyAll, c.UnhealthyAnswer)
	}
	if c.RecursorStrategy != RecursorSequential && c.RecursorStrategy != RecursorRandom {
		bad("RecursorStrategy", "must be %q or %q, got %q", RecursorSequential, RecursorRandom, c.RecursorStrategy)
	}
	if c.UDPSockets < 0 {
		bad("UDPSockets", "must be 0 (one per core) or more, got %d", c.UDPSockets)
	}
	if c.MaxTCPConns < 0 {
		bad("MaxTCPConns", "must be 0 (no cap) or more, got %d", c.MaxTCPConns)
	}
	if n := len(c.CookieSecret); n != 0 && n != 16 {
		bad("CookieSecret", "must be 16 bytes, got %d", n)
	}
	if c.MaxTCPConnsPerClient < 0 {
		bad("MaxTCPConnsPerClient", "must be 0 (no cap) or more, got %d", c.MaxTCPConnsPerClient)
	}
	if r := c.RRL; r.Enabled && r.ResponsesPerSecond < 1 || r.ResponsesPerSecond < 0 || r.ResponsesPerSecond > maxRRLRate {
		bad("RRL.ResponsesPerSecond", "must be between 1 and %d, got %d", maxRRLRate, r.ResponsesPerSecond)
	}
	if r := c.RRL.AllPerSecond; r < 0 || r > maxRRLRate {
		bad("RRL.AllPerSecond", "must be between 0 (no limit) and %d, got %d", maxRRLRate, r)
	}
	if r := c.RRL.MinAmplification; r < 0 || r > 100 {
		bad("RRL.MinAmplification", "must be between 0 (count every reply) and 100, got %d", r)
	}
	if c.RRL.Slip < 0 || c.RRL.Slip > 10 {
		bad("RRL.Slip", "must be between 0 (drop every limited reply) and 10, got %d", c.RRL.Slip)
	}
	if c.RRL.IPv4PrefixLength < 0 || c.RRL.IPv4PrefixLength > 32 {
		bad("RRL.IPv4PrefixLength", "must be between 0 and 32, got %d", c.RRL.IPv4PrefixLength)
	}
	if c.RRL.IPv6PrefixLength < 0 || c.RRL.IPv6PrefixLength > 128 {
		bad("RRL.IPv6PrefixLength", "must be between 0 and 128, got %d", c.RRL.IPv6PrefixLength)
	}
	c.DNSSEC.validate(bad)
	return errors.Join(errs...)
}
