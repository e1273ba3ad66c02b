package agent

import (
	"cmp"
	"context"
	"net"
	"time"

	"github.com/cairndns/cairn/agent/local"
	"github.com/cairndns/cairn/catalog"
	"github.com/cairndns/cairn/gossip"
)

// Crash stops a as a killed process would stop: without leaving the
// cluster, so the other members see it fail. Its data dir is left as it
// is, for a restart.
func Crash(ctx context.Context, a *Agent) error {
	a.skipLeave = true
	return a.Shutdown(ctx)
}

// RegisterInCatalog writes req to the catalog through a's door, as an
// external registration (a node no agent runs on) would be: tests use it
// for catalog contents neither the leader nor anti-entropy manage.
func RegisterInCatalog(ctx context.Context, a *Agent, req *catalog.RegisterRequest) error {
	return local.NewRPCCatalog(a.door, a.cfg.Datacenter, func() string { return "" }).Register(ctx, req)
}

// RaftTerm returns the Raft term of a server agent.
func RaftTerm(a *Agent) uint64 { return a.server.Term() }

// RaftLeader returns the address of the leader a server agent knows.
func RaftLeader(a *Agent) string { return a.server.Leader() }

// Reconcile runs the leader duties of a server agent once, now.
func Reconcile(ctx context.Context, a *Agent) error { return a.leader.Reconcile(ctx) }

// RaftVoters returns the node names of the voters a server agent's Raft
// configuration holds (their Raft IDs are node IDs: named through gossip;
// an ID gossip does not know is returned as it is).
func RaftVoters(a *Agent) []string {
	peers, _ := a.server.Peers()
	names := map[string]string{}
	for _, m := range a.gossip.Members() {
		names[m.ID] = m.Node
	}
	var out []string
	for _, p := range peers {
		if p.Voter {
			out = append(out, cmp.Or(names[p.ID], p.ID))
		}
	}
	return out
}

// NameConflicts returns how many node name conflicts a's LAN pool saw.
func NameConflicts(a *Agent) uint64 { return a.gossip.NameConflicts() }

// PreferredServer returns the server a client agent's door sends its
// calls to now ("" before its first call).
func PreferredServer(a *Agent) string {
	return a.clientDoor.Preferred()
}

// SetNearRefresh sets how often a's "near" DNS entries are sorted again,
// for tests that watch a re-sort without waiting 15s. a is not started
// yet.
func SetNearRefresh(a *Agent, d time.Duration) { a.nearRefresh = d }

// GossipTiming returns the timers a's LAN pool's memberlist runs with,
// and its WAN pool's (the zero Timing on a client, which has none).
func GossipTiming(a *Agent) (lan, wan gossip.Timing) {
	lan = a.gossip.Timing()
	if a.wan != nil {
		wan = a.wan.Timing()
	}
	return lan, wan
}

// Synced reports whether a's first full sync of its node succeeded (what
// its "ready" milestone waits for).
func Synced(a *Agent) bool { return isClosed(a.synced) }

// SetServerDial makes a, not yet started, open its connections to servers
// with dial.
func SetServerDial(a *Agent, dial func(ctx context.Context, addr string) (net.Conn, error)) {
	a.dialServer = dial
}

// SetClockOffset makes a, not yet started, act as if its wall clock were
// off by d in what it tells its peers.
func SetClockOffset(a *Agent, d time.Duration) { a.clockOffset = d }
