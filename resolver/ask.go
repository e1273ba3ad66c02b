package resolver

import (
	"errors"
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
	w := &askWriter{}
	s.ServeDNS(w, q)
	if w.msg == nil {
		return Reply{}, errors.New("ask: no reply")
	}
	out := Reply{Rcode: dns.RcodeToString[w.msg.Rcode]}
	for _, rr := range w.msg.Answer {
		out.Answer = append(out.Answer, rr.String())
	}
	for _, rr := range w.msg.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			out.Extra = append(out.Extra, rr.String())
		}
	}
	return out, nil
}

// askWriter is the dns.ResponseWriter of Ask: it keeps the reply. Its
// addresses are TCP ones, so that the reply is not fitted to a UDP size
// nor rate-limited.
type askWriter struct {
	msg *dns.Msg
}

var askAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}

func (w *askWriter) LocalAddr() net.Addr  { return askAddr }
func (w *askWriter) RemoteAddr() net.Addr { return askAddr }
func (w *askWriter) Network() string      { return "tcp" }

func (w *askWriter) WriteMsg(m *dns.Msg) error {
	w.msg = m.Copy()
	return nil
}

func (w *askWriter) Write(b []byte) (int, error) {
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		return 0, fmt.Errorf("unpack the reply: %w", err)
	}
	w.msg = m
	return len(b), nil
}

func (w *askWriter) Close() error        { return nil }
func (w *askWriter) TsigStatus() error   { return nil }
func (w *askWriter) TsigTimersOnly(bool) {}
func (w *askWriter) Hijack()             {}
