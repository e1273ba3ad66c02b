package resolver

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"time"

	"github.com/miekg/dns"
)

// DNS Cookies (RFC 7873), with server cookies made as RFC 9018 says, so
// that agents sharing Config.CookieSecret (behind one anycast address)
// accept each other's. A client that sends back a server cookie this
// server made for its address has proved it receives what is sent there:
// only such a client is sent a UDP reply larger than 512 bytes, and RRL
// does not limit it, as TCP is not. Any other (no cookie, a client cookie
// only, a server cookie that does not verify) is answered as a client
// without EDNS is: at most 512 bytes, the rest cut with TC set, so that
// it asks again over TCP, as glibc and Unbound do. A spoofed query thus
// gets at most 512 bytes sent to its victim.
//
// No reply is BADCOOKIE: the server never requires a cookie (RFC 7873
// 5.2.3), and a server cookie that does not verify is taken as a client
// cookie alone (5.2.4): the reply carries a fresh server cookie.

const (
	clientCookieLen = 8
	serverCookieLen = 16 // RFC 9018's: version, reserved, timestamp, hash
	cookieLen       = clientCookieLen + serverCookieLen
	// The longest COOKIE option: a client cookie and a server cookie
	// of up to 32 bytes (RFC 7873 4).
	maxCookieLen = clientCookieLen + 32
	// A server cookie is valid from cookieAhead seconds before its
	// timestamp (another agent's clock) until cookieLifetime after it,
	// as RFC 9018 4.3 recommends.
	cookieLifetime = 3600
	cookieAhead    = 300
	// cookieOptionLen is the length of the COOKIE option of a reply:
	// its code, its length, the client cookie and a server cookie.
	cookieOptionLen = 4 + cookieLen
)

// cookieSecret is the key server cookies are made with.
type cookieSecret struct{ k0, k1 uint64 }

// newCookieSecret returns the key of the 16 bytes b, or a random one
// when b is empty.
func newCookieSecret(b []byte) cookieSecret {
	if len(b) == 0 {
		b = make([]byte, 16)
		_, _ = rand.Read(b) // never fails (crypto/rand)
	}
	return cookieSecret{k0: binary.LittleEndian.Uint64(b), k1: binary.LittleEndian.Uint64(b[8:])}
}

// serverCookie writes into dst the server cookie of the client cookie
// client for the address ip (4 or 16 bytes) at ts (seconds since the Unix
// epoch): version 1, reserved 0, the timestamp, then SipHash-2-4 of the
// client cookie, those 8 bytes and ip.
func (k cookieSecret) serverCookie(dst *[serverCookieLen]byte, client []byte, ip net.IP, ts uint32) {
	*dst = [serverCookieLen]byte{0: 1}
	binary.BigEndian.PutUint32(dst[4:], ts)
	binary.LittleEndian.PutUint64(dst[8:], k.hash(client, dst[:8], ip))
}

// hash returns the hash of a server cookie whose first 8 bytes are head.
func (k cookieSecret) hash(client, head []byte, ip net.IP) uint64 {
	var in [clientCookieLen + 8 + net.IPv6len]byte
	copy(in[:], client[:clientCookieLen])
	copy(in[clientCookieLen:], head[:8])
	n := clientCookieLen + 8 + copy(in[clientCookieLen+8:], ip)
	return sipHash24(k.k0, k.k1, in[:n])
}

// verify reports whether c, a COOKIE option's data of the length
// validCookie checks, holds a server cookie made with k for ip that is
// still valid at now.
func (k cookieSecret) verify(c []byte, ip net.IP, now uint32) bool {
	if len(c) != cookieLen || c[clientCookieLen] != 1 {
		return false // not made as this server makes them (another version)
	}
	s := c[clientCookieLen:]
	age := int32(now - binary.BigEndian.Uint32(s[4:])) // serial arithmetic (RFC 1982)
	if age > cookieLifetime || age < -cookieAhead {
		return false
	}
	return binary.LittleEndian.Uint64(s[8:]) == k.hash(c, s[:8], ip)
}

// validCookie reports whether n is the length of a well-formed COOKIE
// option: a client cookie alone, or with a server cookie of 8 to 32
// bytes (RFC 7873 5.2.2: any other is FORMERR).
func validCookie(n int) bool {
	return n == clientCookieLen || n >= clientCookieLen+8 && n <= maxCookieLen
}

// clientIP returns the IP address of a, 4 bytes for IPv4, as server
// cookies hash it; nil for an address of no IP.
func clientIP(a net.Addr) net.IP {
	var ip net.IP
	switch a := a.(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	default:
		return nil
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4
	}
	return ip.To16()
}

// queryCookie is what the COOKIE option of a query says, and the COOKIE
// option data of its reply.
type queryCookie struct {
	present  bool // the query carried a well-formed COOKIE option
	verified bool // … with a valid server cookie: the client proved its address
	reply    [cookieLen]byte
}

// readCookie reads the COOKIE option data c of a query from remote,
// received at now (seconds since the Unix epoch), into ck: whether its
// server cookie verifies, and the reply's client cookie and fresh server
// cookie. c's length is one validCookie accepts.
func (s *Server) readCookie(ck *queryCookie, c []byte, remote net.Addr, now uint32) {
	ip := clientIP(remote)
	ck.present = true
	ck.verified = len(c) > clientCookieLen && s.cookies.verify(c, ip, now)
	copy(ck.reply[:], c[:clientCookieLen])
	s.cookies.serverCookie((*[serverCookieLen]byte)(ck.reply[clientCookieLen:]), c, ip, now)
}

// msgCookie finds the first COOKIE option of opt (RFC 7873 5.2: the
// others are ignored) and reads it into ck as readCookie does, now. A
// COOKIE option not well-formed is errMalformed. With Config.Cookies off
// it reads nothing.
func (s *Server) msgCookie(ck *queryCookie, opt *dns.OPT, remote net.Addr) error {
	if !s.cfg.Cookies || opt == nil {
		return nil
	}
	for _, o := range opt.Option {
		c, ok := o.(*dns.EDNS0_COOKIE)
		if !ok {
			continue
		}
		var buf [maxCookieLen]byte
		n, ok := decodeCookie(&buf, c.Cookie)
		if !ok {
			return errMalformed
		}
		s.readCookie(ck, buf[:n], remote, s.unixSeconds(s.metrics.now()))
		return nil
	}
	return nil
}

// decodeCookie decodes into buf the hex text of a COOKIE option as
// miekg/dns holds it, reporting whether it is well-formed. It does not
// allocate.
func decodeCookie(buf *[maxCookieLen]byte, h string) (int, bool) {
	n := len(h) / 2
	if len(h)%2 != 0 || !validCookie(n) {
		return 0, false
	}
	for i := range n {
		hi, ok1 := unhex(h[2*i])
		lo, ok2 := unhex(h[2*i+1])
		if !ok1 || !ok2 {
			return 0, false
		}
		buf[i] = hi<<4 | lo
	}
	return n, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// cookieOption returns the COOKIE option of a reply carrying ck.
func cookieOption(ck *queryCookie) *dns.EDNS0_COOKIE {
	return &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: hex.EncodeToString(ck.reply[:])}
}

// unixSeconds returns the time since the Unix epoch, in seconds, of the
// time start since the server's epoch, as server cookies count it.
func (s *Server) unixSeconds(start time.Duration) uint32 {
	return uint32(s.metrics.epoch.Add(start).Unix())
}

// udpLimit returns the most bytes a UDP reply may take: Config.UDPSize to
// a client that proved its address (or with Config.Cookies off), 512 to
// any other.
func (s *Server) udpLimit(proved bool) uint16 {
	if s.cfg.Cookies && !proved {
		return dns.MinMsgSize
	}
	return s.cfg.UDPSize
}
