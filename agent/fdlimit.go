package agent

import (
	"github.com/cairndns/cairn/internal/fdlimit"
)

// httpMaxConns is the cap on HTTP connections: limits.http_max_conns, or
// when that is 0 what the file descriptor limit leaves once a reserve for
// DNS over UDP and TCP, Raft, RPC and gossip is set aside, so a flood of
// HTTP clients (slow ones included) can never starve them.
func (a *Agent) httpMaxConns() int {
	if n := a.cfg.Limits.HTTPMaxConns; n > 0 {
		return n
	}
	soft, hard, err := fdlimit.Raise()
	if err != nil {
		return 0 // unknown limit: the per-client cap still applies
	}
	a.logger.Debug("file descriptor limit", "soft", soft, "hard", hard)
	total := fdlimit.ConnBudget(soft)
	if total == 0 {
		return 0 // no limit on descriptors
	}
	budget := int(total) - a.cfg.Resolver.MaxTCPConns
	if budget < 64 {
		budget = 64
	}
	return budget
}
