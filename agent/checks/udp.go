package checks

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/cairndns/cairn/catalog"
)

// udpPayload is the datagram a UDP check sends. UDP has no handshake, so
// the check can only send something and listen: a reply, or silence until
// the Timeout, is passing; an ICMP port-unreachable, which the kernel
// reports on the connected socket as "connection refused", is critical.
const udpPayload = "cairn health check"

// udpProbe sends a datagram and waits up to the Timeout for an answer or
// an error. A passing run without a reply therefore takes the whole
// Timeout (as Consul's does): silence is only evidence once it has lasted.
type udpProbe struct {
	addr string
}

func (p *udpProbe) probe(ctx context.Context) result {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", p.addr)
	if err != nil {
		return result{catalog.HealthCritical, err.Error()}
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	// Removal cancels ctx before its deadline: end the read then too.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write([]byte(udpPayload)); err != nil {
		return result{catalog.HealthCritical, err.Error()}
	}
	buf := make([]byte, 512)
	_, err = conn.Read(buf)
	var nerr net.Error
	switch {
	case err == nil:
		return result{catalog.HealthPassing, "UDP " + p.addr + ": reply received"}
	case errors.As(err, &nerr) && nerr.Timeout():
		return result{catalog.HealthPassing, "UDP " + p.addr + ": no reply and no ICMP error within the timeout"}
	}
	return result{catalog.HealthCritical, err.Error()}
}
