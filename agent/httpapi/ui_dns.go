package httpapi

import (
	"net/http"
)

// DNSAsker answers a DNS question as the agent's DNS server answers it
// now (the same handler and cache), for the web UI, which cannot send DNS
// itself. The agent wires its resolver.
type DNSAsker interface {
	// AskDNS answers name for qtype ("A", "SRV", ...); an error says the
	// question itself is bad.
	AskDNS(name, qtype string) (DNSReply, error)
}

// DNSReply is an answer: its rcode and records as dig prints them.
type DNSReply struct {
	Rcode  string
	Answer []string
	Extra  []string
}

// SetDNS makes GET /v1/internal/ui/dns answer through d. Call it before
// Start; without it the endpoint answers 404.
func (s *Server) SetDNS(d DNSAsker) { s.dns = d }

// uiDNS answers GET /v1/internal/ui/dns?name=<name>&type=<qtype> (type
// defaults to A) with what the agent's DNS answers for it now:
// {"Name", "Type", "Rcode", "Answer": [...], "Extra": [...]}. Consul keeps
// its UI's own endpoints under /v1/internal/ui/ too. It checks no ACL: it
// tells what the DNS port tells anyone who can reach the agent (DNS
// answers with the agent's default token).
func (s *Server) uiDNS(w http.ResponseWriter, r *http.Request) error {
	if s.dns == nil {
		return notFound("DNS is not served by this agent")
	}
	q := r.URL.Query()
	name, qtype := q.Get("name"), q.Get("type")
	if name == "" {
		return badRequest("name", "is required: the name to ask, such as web.service.cluster")
	}
	if qtype == "" {
		qtype = "A"
	}
	reply, err := s.dns.AskDNS(name, qtype)
	if err != nil {
		return badRequest("name", "%s", oneLine(err.Error()))
	}
	writeJSONPretty(w, r, struct {
		Name, Type, Rcode string
		Answer, Extra     []string
	}{name, qtype, reply.Rcode, nonNil(reply.Answer), nonNil(reply.Extra)})
	return nil
}
