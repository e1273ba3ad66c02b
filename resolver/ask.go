package resolver

import (
	"fmt"
	"net"
	"strings"

	"github.com/miekg/dns"
)

// Reply is an answer as Ask gives it: the records in their presentation
// format, as dig prints them.
type Reply struct {
	Rcode  string   // "NOERROR", "NXDOMAIN", ...
	Answer []string // the answer section
	Extra  []string // the additional section, without the OPT record
}

// Ask answers one question as a client over TCP would get it (no
// truncation), through the same handler, cache and rules: what the agent
// answers now, for a page that cannot send DNS itself. qtype is a type's
// name ("A", "SRV", ...). It counts in the DNS metrics like any question.
func (s *Server) Ask(name, qtype string) (Reply, error) {
	t, ok := dns.StringToType[strings.ToUpper(qtype)]
	if !ok {
		return Reply{}, fmt.Errorf("ask %s: unknown query type %q", name, qtype)
	}
	if _, ok := dns.IsDomainName(name); !ok || name == "" {
		return Reply{}, fmt.Errorf("ask: %q is not a domain name", name)
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), t)
	q.RecursionDesired = false
	wire, err := q.Pack()
	if err != nil {
		return Reply{}, fmt.Errorf("ask %s: %w", name, err)
	}
	raw, _, err := s.ServeWire(wire, nil) // wire.go: answered as over TCP
	if err != nil {
		return Reply{}, fmt.Errorf("ask %s: %w", name, err)
	}
	m := new(dns.Msg)
	if err := m.Unpack(raw); err != nil {
		return Reply{}, fmt.Errorf("ask %s: unpack the reply: %w", name, err)
	}
	out := Reply{Rcode: dns.RcodeToString[m.Rcode]}
	for _, rr := range m.Answer {
		out.Answer = append(out.Answer, rr.String())
	}
	for _, rr := range m.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			out.Extra = append(out.Extra, rr.String())
		}
	}
	return out, nil
}

// askAddr is the address of the in-process questions of Ask and
// ServeWire when the caller gives none: a TCP one, so that the reply is
// neither fitted to a UDP size nor rate-limited.
var askAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
