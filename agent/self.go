package agent

import (
	"runtime"
	"strconv"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/buildinfo"
)

// selfStats returns the sections of Consul's /v1/agent/self Stats that cairn
// has, under Consul's names, each value a string: agent, build, consul,
// runtime and serf_lan on every agent; raft and serf_wan on a server.
// Each call collects them afresh.
func (a *Agent) selfStats() map[string]map[string]string {
	out := map[string]map[string]string{
		"agent":   a.localStats(),
		"build":   buildStats(),
		"consul":  a.consulStats(),
		"runtime": runtimeStats(),
	}
	if a.gossip != nil { // nil only when start failed part way
		out["serf_lan"] = poolStats(a.gossip)
	}
	a.role.addStats(out)
	return out
}

// localStats counts the agent's own services and checks.
func (a *Agent) localStats() map[string]string {
	out := map[string]string{"services": "0", "checks": "0", "check_ttls": "0", "check_monitors": "0"}
	if a.local == nil {
		return out
	}
	var ttls, monitors int
	cs := a.local.Checks()
	for _, c := range cs {
		switch c.Type {
		case checks.TypeTTL:
			ttls++
		case checks.TypeScript:
			monitors++
		}
	}
	out["services"] = strconv.Itoa(len(a.local.Services()))
	out["checks"] = strconv.Itoa(len(cs))
	out["check_ttls"], out["check_monitors"] = strconv.Itoa(ttls), strconv.Itoa(monitors)
	return out
}

// buildStats is the agent's version and revision (identity.go).
func buildStats() map[string]string {
	return map[string]string{"version": buildinfo.Version(), "revision": buildinfo.Revision(), "prerelease": "", "version_metadata": ""}
}

// consulStats is the part of Consul's consul section every agent has;
// its role adds the rest (addStats).
func (a *Agent) consulStats() map[string]string {
	return map[string]string{"server": strconv.FormatBool(a.cfg.Server)}
}

// addStats: a client's count of the servers it can reach.
func (r clientRole) addStats(out map[string]map[string]string) {
	out["consul"]["known_servers"] = strconv.Itoa(len(r.a.servers.Addrs()))
}

// addStats: a server's view of the leader and the datacenters, its Raft
// state and its WAN pool.
func (r serverRole) addStats(out map[string]map[string]string) {
	a := r.a
	if a.server == nil { // start failed part way
		return
	}
	acl := "disabled"
	if a.cfg.ACL.Enabled {
		acl = "enabled"
	}
	c := out["consul"]
	c["acl"] = acl
	c["bootstrap"] = strconv.FormatBool(a.bootstrapExpect() == 1)
	c["leader"] = strconv.FormatBool(a.server.IsLeader())
	c["leader_addr"] = a.server.Leader()
	c["known_datacenters"] = strconv.Itoa(max(1, len(a.router.Datacenters())))
	out["raft"] = a.server.RaftStats()
	if a.wan != nil {
		out["serf_wan"] = poolStats(a.wan)
	}
}

// runtimeStats is Consul's runtime section.
func runtimeStats() map[string]string {
	return map[string]string{
		"arch":       runtime.GOARCH,
		"os":         runtime.GOOS,
		"version":    runtime.Version(),
		"cpu_count":  strconv.Itoa(runtime.NumCPU()),
		"max_procs":  strconv.Itoa(runtime.GOMAXPROCS(0)),
		"goroutines": strconv.Itoa(runtime.NumGoroutine()),
	}
}

// poolStats is a gossip pool's part of Consul's serf_lan and serf_wan
// sections: the members by status, the health score and whether gossip
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
