package resolver

import (
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/zones"
)

// The values of Config.UnhealthyAnswer.
const (
	// UnhealthyNoData answers NOERROR with no records and the SOA: the
	// name exists, it just has nothing to give out now. Negative caches
	// keep it no longer than the SOA minimum.
	UnhealthyNoData = "nodata"
	// UnhealthyNXDomain answers NXDOMAIN, as Consul does.
	UnhealthyNXDomain = "nxdomain"
	// UnhealthyAll fails open: every instance is answered, as if healthy.
	UnhealthyAll = "all"
)

// unhealthyAnswer answers a question about a service that has instances
// but no healthy one, as Config.UnhealthyAnswer says.
func (s *Server) unhealthyAnswer(z *zones.Zone, q zones.Query, qtype uint16, unhealthy []catalog.ServiceInstance) zones.Answer {
	switch s.cfg.UnhealthyAnswer {
	case UnhealthyAll:
		return z.ServiceAnswer(q, qtype, unhealthy)
	case UnhealthyNXDomain:
		return z.Negative(zones.NameError)
	}
	return z.Negative(zones.NoData)
}
