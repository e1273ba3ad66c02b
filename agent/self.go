package agent

import "strconv"

// selfStats is what only the agent knows of /v1/agent/self's Stats: the
// consul section, the pools' and a server's Raft.
func (a *Agent) selfStats() map[string]map[string]string {
	out := map[string]map[string]string{"consul": {"server": strconv.FormatBool(a.cfg.Server)}}
	if a.pools != nil { // nil only when start failed part way
		a.pools.Stats(out)
	}
	a.role.addStats(out)
	return out
}

func (r clientRole) addStats(out map[string]map[string]string) {
	out["consul"]["known_servers"] = strconv.Itoa(len(r.a.servers.Addrs()))
}

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
}
