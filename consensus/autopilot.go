package consensus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/rpc"
)

// This file holds autopilot, the part of the leader's duties that looks
// after the servers themselves, as Consul's autopilot does: it judges
// every server's health from its gossip status and its Raft stats, makes
// a server that joined a running cluster (added as a non-voter by
// reconcileServers) a voter once it has been healthy for
// ServerStabilizationTime, and reports the servers' health for the
// Operator endpoint. Dead-server cleanup is reconcileServers' (leader_raft.go),
// switched by CleanupDeadServers.

// Autopilot's configuration is rpc.AutopilotConfig. The servers keep it in
// Raft (autopilot_fsm.go), so that every leader applies the same one and
// an operator's change outlives leadership changes; the agent's autopilot
// block is only what the first leader stores when none is stored yet.

// Caller sends one RPC to the server at addr, and says how far that
// server's clock was from this one's in its replies; *rpc.Pool satisfies
// it. The leader asks the other servers for their Raft stats through it,
// and reports their clock skew with their health.
type Caller interface {
	Call(ctx context.Context, addr, method string, args, reply any) error
	ClockSkew(addr string) (skew time.Duration, ok bool)
}

// Autopilot's pacing.
const (
	// minHealthInterval bounds how often the servers are asked, however
	// short ServerStabilizationTime is.
	minHealthInterval = 50 * time.Millisecond
	// statsParallel bounds the RaftStats requests in flight at once.
	statsParallel = 8
)

// autopilotState is the leader's view of its servers' health during one
// term; it starts over with each.
type autopilotState struct {
	// refresh serializes rounds (the loop's and ServerHealth's), so a
	// slower one never overwrites a newer one's result.
	refresh sync.Mutex

	mu sync.Mutex
	// term is the leadership signal of the term the state belongs to.
	term <-chan struct{}
	// marks are each server's Healthy and when it last changed, by ID.
	marks map[string]healthMark
	// report is the latest health, nil before the first of the term. It
	// is never changed once stored.
	report *rpc.ServerHealthResponse
}

type healthMark struct {
	healthy bool
	since   time.Time
}

// autopilotConfig is the configuration in force: the one stored in Raft,
// else the leader's own.
func (l *Leader) autopilotConfig() rpc.AutopilotConfig {
	if c := l.s.AutopilotConfig(); c != nil {
		return *c
	}
	return l.cfg.Autopilot
}

// healthInterval is how often autopilot runs under cfg: HealthInterval,
// or a fifth of ServerStabilizationTime when that is shorter, so that a
// stable server is promoted at most a fifth of that time late.
func (l *Leader) healthInterval(cfg rpc.AutopilotConfig) time.Duration {
	interval := l.cfg.HealthInterval
	if s := cfg.ServerStabilizationTime / 5; s > 0 && s < interval {
		interval = max(s, minHealthInterval)
	}
	return interval
}

// runAutopilot judges the servers' health and promotes the stable
// non-voters every healthInterval, until ctx ends (lead cancels it when
// the term does). It runs beside the reconciles, on a goroutine lead owns,
// so that asking a slow server for its stats never holds up membership.
func (l *Leader) runAutopilot(ctx context.Context, term <-chan struct{}) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cfg := l.autopilotConfig()
		report, err := l.refreshHealth(ctx, cfg, term)
		if err == nil {
			err = errors.Join(l.fixRaftIDs(ctx, report), l.promoteStable(ctx, cfg, report))
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrNotLeader) {
				return
			}
			l.warn("autopilot:"+err.Error(), "autopilot round failed", "err", err)
		}
		t.Reset(l.healthInterval(cfg))
	}
}

// ServerHealth returns the health of every server of the Raft
// configuration as this leader last judged it, judging it now when it has
// not yet in this term or when the configuration changed since. Only the
// leader can: elsewhere it returns an error wrapping ErrNotLeader. The
// Operator endpoint answers with it.
func (l *Leader) ServerHealth(ctx context.Context) (*rpc.ServerHealthResponse, error) {
	term := l.s.LeadershipChanged()
	if !l.s.IsLeader() {
		return nil, fmt.Errorf("server health: %w", ErrNotLeader)
	}
	peers, err := l.s.Peers()
	if err != nil {
		return nil, err
	}
	l.ap.mu.Lock()
	report := l.ap.report
	current := l.ap.term == term && report != nil && sameServers(report.Servers, peers)
	l.ap.mu.Unlock()
	if !current {
		var err error
		if report, err = l.refreshHealth(ctx, l.autopilotConfig(), term); err != nil {
			return nil, err
		}
	}
	out := *report
	out.Servers = slices.Clone(report.Servers)
	return &out, nil
}

// sameServers reports whether health lists exactly the servers of peers,
// each with the same vote.
func sameServers(health []rpc.ServerHealth, peers []Peer) bool {
	if len(health) != len(peers) {
		return false
	}
	for _, p := range peers {
		i := slices.IndexFunc(health, func(h rpc.ServerHealth) bool { return h.ID == p.ID })
		if i < 0 || health[i].Voter != p.Voter || health[i].Address != p.Address {
			return false
		}
	}
	return true
}

// refreshHealth asks every server of the configuration for its Raft
// stats, judges each one's health under cfg, and stores the result as the
// latest health of term.
func (l *Leader) refreshHealth(ctx context.Context, cfg rpc.AutopilotConfig, term <-chan struct{}) (*rpc.ServerHealthResponse, error) {
	l.ap.refresh.Lock()
	defer l.ap.refresh.Unlock()
	if !l.s.IsLeader() {
		return nil, fmt.Errorf("server health: %w", ErrNotLeader)
	}
	peers, err := l.s.Peers()
	if err != nil {
		return nil, err
	}
	members := l.serversByRaftID()
	self := l.s.raftStats(l.cfg.Version)
	stats := l.fetchStats(ctx, peers)
	stats[l.s.ID()] = self
	now := time.Now()

	l.ap.mu.Lock()
	defer l.ap.mu.Unlock()
	if l.ap.term != term {
		l.ap.term, l.ap.marks, l.ap.report = term, make(map[string]healthMark), nil
	}
	out := &rpc.ServerHealthResponse{Healthy: true, Servers: make([]rpc.ServerHealth, 0, len(peers))}
	voters, healthyVoters := 0, 0
	seen := make(map[string]bool, len(peers))
	for _, p := range peers {
		seen[p.ID] = true
		h := rpc.ServerHealth{
			ID: p.ID, Name: p.ID, Address: p.Address, SerfStatus: "none",
			Leader: p.ID == l.s.ID(), Voter: p.Voter, LastContact: -1,
		}
		if m, ok := members[p.ID]; ok {
			h.Name, h.SerfStatus = m.Node, m.Status.String()
		}
		if st := stats[p.ID]; st != nil {
			h.LastContact, h.LastTerm, h.LastIndex, h.Version = st.LastContact, st.LastTerm, st.LastIndex, st.Version
			h.StorageError, h.RaftID = st.StorageError, st.ID
		}
		switch {
		case h.Leader:
			h.ClockSkewKnown = true
		case l.cfg.Caller != nil: // measured by fetchStats' calls, or earlier ones
			h.ClockSkew, h.ClockSkewKnown = l.cfg.Caller.ClockSkew(p.Address)
		}
		h.Healthy = healthy(h, cfg, self.LastTerm, self.LastIndex)
		mark, ok := l.ap.marks[p.ID]
		if !ok || mark.healthy != h.Healthy {
			mark = healthMark{healthy: h.Healthy, since: now}
			l.ap.marks[p.ID] = mark
		}
		h.StableSince = mark.since.UTC()
		out.Healthy = out.Healthy && h.Healthy
		if p.Voter {
			voters++
			if h.Healthy {
				healthyVoters++
			}
		}
		out.Servers = append(out.Servers, h)
	}
	for id := range l.ap.marks {
		if !seen[id] {
			delete(l.ap.marks, id)
		}
	}
	out.FailureTolerance = max(0, healthyVoters-(voters/2+1))
	slices.SortFunc(out.Servers, func(a, b rpc.ServerHealth) int { return cmp.Compare(a.ID, b.ID) })
	if !slices.Equal(storageFailing(l.ap.report), storageFailing(out)) {
		select { // the reconcile updates the servers' storage checks
		case l.storageChanged <- struct{}{}:
		default:
		}
	}
	l.ap.report = out
	return out, nil
}

// storageFailing lists the servers of report that cannot write their
// Raft storage, by node name; nil for no report.
func storageFailing(report *rpc.ServerHealthResponse) []string {
	if report == nil {
		return nil
	}
	var ids []string
	for _, h := range report.Servers {
		if h.StorageError != "" {
			ids = append(ids, h.Name)
		}
	}
	return ids
}

// healthy says whether a server is healthy under cfg, as Consul's
// autopilot judges it: alive in gossip, heard from the leader within
// LastContactThreshold, its log ending in the leader's last term, and
// trailing the leader's last index by at most MaxTrailingLogs; and, as
// Consul's does not, able to write its Raft storage (a server with a full
// disk still answers heartbeats, and would count as healthy until it
// trailed by MaxTrailingLogs).
func healthy(h rpc.ServerHealth, cfg rpc.AutopilotConfig, leaderTerm, leaderIndex uint64) bool {
	switch {
	case h.SerfStatus != gossip.StatusAlive.String():
		return false
	case h.StorageError != "":
		return false
	case h.LastContact < 0 || h.LastContact > cfg.LastContactThreshold:
		return false
	case h.LastTerm != leaderTerm:
		return false
	case leaderIndex > h.LastIndex && leaderIndex-h.LastIndex > cfg.MaxTrailingLogs:
		return false
	}
	return true
}

// fetchStats asks every other server of peers for its Raft stats, at most
// statsParallel at once, each within HealthInterval. A server that does
// not answer is left out (and so judged unhealthy); without a Caller every
// other server is.
func (l *Leader) fetchStats(ctx context.Context, peers []Peer) map[string]*rpc.RaftStatsResponse {
	out := make(map[string]*rpc.RaftStatsResponse, len(peers))
	if l.cfg.Caller == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.HealthInterval)
	defer cancel()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		slot = make(chan struct{}, statsParallel)
	)
	for _, p := range peers {
		if p.ID == l.s.ID() {
			continue
		}
		slot <- struct{}{}
		wg.Go(func() {
			defer func() { <-slot }()
			var reply rpc.RaftStatsResponse
			if err := l.cfg.Caller.Call(ctx, p.Address, rpc.MethodOperatorRaftStats, &rpc.RaftStatsRequest{}, &reply); err != nil {
				l.logger.Debug("server did not report its raft stats", "peer", p.ID, "err", err)
				return
			}
			mu.Lock()
			out[p.ID] = &reply
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// fixRaftIDs re-adds, as a non-voter for promoteStable to promote, each
// server that runs under another Raft ID than its entry's (one whose data
// dir was emptied came back under its node ID where the entry has its
// name): Raft would not count it as the voter its entry is. The entry is
// removed first, as Consul's leader does for a server that changed ID.
func (l *Leader) fixRaftIDs(ctx context.Context, report *rpc.ServerHealthResponse) error {
	var errs []error
	for _, h := range report.Servers {
		if h.RaftID == "" || h.RaftID == h.ID || h.Leader {
			continue
		}
		l.logger.Info("re-adding a server under the raft ID it runs with", "peer", h.ID, "id", h.RaftID, "addr", h.Address)
		l.mu.Lock()
		err := l.s.RemoveServer(ctx, h.ID)
		if err == nil {
			err = l.s.AddNonvoter(ctx, h.RaftID, h.Address)
		}
		l.mu.Unlock()
		if err != nil {
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			errs = append(errs, fmt.Errorf("re-add %q as %q: %w", h.ID, h.RaftID, err))
		}
	}
	return errors.Join(errs...)
}

// promoteStable makes a voter of every non-voter of report that has been
// healthy for ServerStabilizationTime. It holds the reconcile lock, so a
// promotion and a reconcile never change the configuration at once. (The
// report it read still names them non-voters; ServerHealth judges anew
// when the configuration has changed.)
func (l *Leader) promoteStable(ctx context.Context, cfg rpc.AutopilotConfig, report *rpc.ServerHealthResponse) error {
	now := time.Now()
	var errs []error
	for _, h := range report.Servers {
		if h.Voter || !h.Healthy || now.Sub(h.StableSince) < cfg.ServerStabilizationTime {
			continue
		}
		l.mu.Lock()
		err := l.s.AddVoter(ctx, h.ID, h.Address)
		l.mu.Unlock()
		if err != nil {
			if errors.Is(err, ErrNotLeader) {
				return err
			}
			errs = append(errs, fmt.Errorf("promote %q: %w", h.ID, err))
			continue
		}
		l.logger.Info("promoted a stable server to voter", "peer", h.ID, "stable_for", now.Sub(h.StableSince).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}
