package checks

import (
	"context"
	"net"

	"github.com/cairndns/cairn/catalog"
)

// tcpProbe connects to an address: connected is passing; refused, no
// route, or no answer within Timeout is critical.
type tcpProbe struct {
	addr string
}

func (p *tcpProbe) probe(ctx context.Context) result {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return result{catalog.HealthCritical, err.Error()}
	}
	conn.Close()
	return result{catalog.HealthPassing, "TCP connect " + p.addr + ": Success"}
}
