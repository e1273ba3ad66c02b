package resolver

import (
	"github.com/cairndns/cairn/zones"
)

// lookupReverse answers a reverse-mapping question (in-addr.arpa,
// ip6.arpa) from the Source's address index. found is false when qname is
// not a whole address or nothing in the catalog holds it: the question
// then goes on as any name outside cairn's zones does, to the recursors
// or REFUSED. A Source error is found, and answered SERVFAIL.
func (s *Server) lookupReverse(qname string, qtype uint16) (ans zones.Answer, found bool, err error) {
	addr, ok := zones.ParseReverse(qname)
	if !ok {
		return zones.Answer{}, false, nil
	}
	ctx := newQueryContext(s.cfg.QueryTimeout)
	defer ctx.cancel()
	nodes, services, err := s.src.Reverse(ctx, addr)
	if err != nil {
		return zones.Answer{}, true, err
	}
	if len(nodes) == 0 && len(services) == 0 {
		return zones.Answer{}, false, nil
	}
	return s.zone.ReverseAnswer(qname, qtype, nodes, services), true, nil
}
