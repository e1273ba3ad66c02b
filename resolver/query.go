package resolver

import (
	"github.com/cairndns/cairn/zones"
)

// preparedQuery answers a KindQuery question by executing the query
// through the Source. Answers are not memoized: each question executes
// the query, whose result may come from another datacenter each time.
func (s *Server) preparedQuery(z *zones.Zone, q zones.Query, qtype uint16) (zones.Answer, error) {
	ctx := newQueryContext(s.cfg.QueryTimeout)
	defer ctx.cancel()
	res, err := s.src.PreparedQuery(ctx, q.Datacenter, q.Name)
	if err != nil {
		return failed(z, err)
	}
	return z.QueryAnswer(q, qtype, res), nil
}
