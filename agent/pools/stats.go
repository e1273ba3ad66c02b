package pools

import (
	"strconv"

	"github.com/cairndns/cairn/gossip"
)

// Stats adds the pools' sections of Consul's /v1/agent/self Stats to out:
// serf_lan, and serf_wan on a server.
func (p *Pools) Stats(out map[string]map[string]string) {
	out["serf_lan"] = poolStats(p.lan)
	if p.wan != nil {
		out["serf_wan"] = poolStats(p.wan)
	}
}

// poolStats is the members by status, the health score and whether gossip
// is encrypted.
func poolStats(p *gossip.Pool) map[string]string {
	var members, failed, left int
	for _, m := range p.Members() {
		switch m.Status {
		case gossip.StatusAlive:
			members++
		case gossip.StatusFailed:
			failed++
		case gossip.StatusLeft:
			left++
		}
	}
	return map[string]string{
		"members":      strconv.Itoa(members + failed + left),
		"failed":       strconv.Itoa(failed),
		"left":         strconv.Itoa(left),
		"health_score": strconv.Itoa(p.HealthScore()),
		"encrypted":    strconv.FormatBool(p.Encrypted()),
	}
}
