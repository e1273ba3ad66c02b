package resolver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/cairndns/cairn/zones"
)

// Recursor strategies, the values of Config.RecursorStrategy.
const (
	// RecursorSequential asks the recursors in the order configured.
	RecursorSequential = "sequential"
	// RecursorRandom starts at a random recursor, then asks the others in
	// the order configured (wrapping around).
	RecursorRandom = "random"
)

// defaultRecursorPort is the port of a recursor configured without one.
const defaultRecursorPort = 53

// RecursorAddr returns the host:port to send queries to for a configured
// recursor, an IP address with or without a port.
func RecursorAddr(s string) (string, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return "", fmt.Errorf("%q: port 0", s)
		}
		return ap.String(), nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an IP address with an optional port", s)
	}
	return netip.AddrPortFrom(ip, defaultRecursorPort).String(), nil
}

// forward answers a question about a name outside cairn's domains by
// asking the configured recursors, r being the client's query.
//
// Without recursors, or when the client did not ask for recursion (RD
// clear), it is refused: cairn is never an open recursor, and a stub that
// does not want recursion gets no referral either. Otherwise the
// recursors are asked in the order of Config.RecursorStrategy until one
// answers NOERROR or NXDOMAIN; one that fails, times out (after
// Config.RecursorTimeout, the UDP try and a TCP retry of a truncated reply
// together) or answers another rcode is passed over, as Consul does. The
// answer's sections are the recursor's, without its OPT record (the reply
// gets the server's own); when every recursor failed the error is
// errRecursion.
func (s *Server) forward(r *dns.Msg) (zones.Answer, error) {
	n := len(s.cfg.Recursors)
	if n == 0 || !r.RecursionDesired {
		return zones.Answer{Result: zones.Refused}, nil
	}
	req := forwardQuery(r, s.cfg.UDPSize)
	first := 0
	if s.cfg.RecursorStrategy == RecursorRandom {
		first = rand.IntN(n)
	}
	for i := range n {
		addr, err := RecursorAddr(s.cfg.Recursors[(first+i)%n])
		if err != nil {
			continue // Validate rejects these; never reached
		}
		reply, err := s.exchange(req, addr)
		if err != nil {
			continue // per query, nothing is logged; the next recursor may answer
		}
		switch reply.Rcode {
		case dns.RcodeSuccess:
			return upstreamAnswer(reply, zones.Success), nil
		case dns.RcodeNameError:
			return upstreamAnswer(reply, zones.NameError), nil
		}
	}
	return zones.Answer{}, errRecursion
}

// forwardQuery returns the query sent to recursors for the client's query
// r: a new message with r's question (in the case the client sent it), RD
// set, CD copied, and an OPT record with the client's buffer size and DO
// bit, or the server's size when the client sent none. The client's EDNS0
// options are not passed on.
func forwardQuery(r *dns.Msg, udpSize uint16) *dns.Msg {
	req := new(dns.Msg)
	req.Id = dns.Id()
	req.RecursionDesired = true
	req.CheckingDisabled = r.CheckingDisabled
	req.Question = []dns.Question{r.Question[0]}
	size, do := udpSize, false
	if opt := r.IsEdns0(); opt != nil {
		size, do = max(opt.UDPSize(), dns.MinMsgSize), opt.Do()
	}
	req.SetEdns0(size, do)
	return req
}

// exchange sends req to the recursor at addr over UDP, and again over TCP
// when the UDP reply is truncated, both within one Config.RecursorTimeout.
// A reply that does not answer req's question is an error.
func (s *Server) exchange(req *dns.Msg, addr string) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RecursorTimeout)
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: s.cfg.RecursorTimeout}
	reply, _, err := c.ExchangeContext(ctx, req, addr)
	if err == nil && reply.Truncated {
		c.Net = "tcp"
		reply, _, err = c.ExchangeContext(ctx, req, addr)
	}
	if err != nil {
		return nil, err
	}
	if q := req.Question[0]; len(reply.Question) != 1 || reply.Question[0].Qtype != q.Qtype ||
		reply.Question[0].Qclass != q.Qclass || !strings.EqualFold(reply.Question[0].Name, q.Name) {
		return nil, errors.New("reply to another question")
	}
	return reply, nil
}

// upstreamAnswer returns the sections of a recursor's reply, with result
// res, leaving out the recursor's OPT record. reply is not shared, so its
// sections are used as they are.
func upstreamAnswer(reply *dns.Msg, res zones.Result) zones.Answer {
	extra := slices.DeleteFunc(reply.Extra, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeOPT })
	return zones.Answer{Answer: reply.Answer, Ns: reply.Ns, Extra: extra, Result: res}
}
