package httpapi

import (
	"net/http"
)

// DNSReply is an answer: its rcode and records as dig prints them.
type DNSReply struct {
	Rcode  string
	Answer []string
	Extra  []string
}

// uiDNS answers GET /v1/internal/ui/dns?name=<name>&type=<qtype> (type
// defaults to A) with what the agent's DNS answers for it now:
// {"Name", "Type", "Rcode", "Answer": [...], "Extra": [...]}. Consul keeps
// its UI's own endpoints under /v1/internal/ui/ too. It checks no ACL: it
// tells what the DNS port tells anyone who can reach the agent (DNS
// answers with the agent's default token).
func (s *Server) uiDNS(w http.ResponseWriter, r *http.Request) error {
	if s.deps.AskDNS == nil {
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
	reply, err := s.deps.AskDNS(name, qtype)
	if err != nil {
		return badRequest("name", "%s", oneLine(err.Error()))
	}
	writeJSONPretty(w, r, struct {
		Name, Type, Rcode string
		Answer, Extra     []string
	}{name, qtype, reply.Rcode, nonNil(reply.Answer), nonNil(reply.Extra)})
	return nil
}
