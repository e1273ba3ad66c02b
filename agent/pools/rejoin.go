package pools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/internal/clock"
)

// The agent remembers where the other members of its gossip pools were, so
// that after a crash or a restart it rejoins them even when its -join (or
// -join-wan) addresses name no one alive (or only itself, as the first
// server's often do). Consul keeps a serf snapshot for the same reason. The
// file is a hint, not state: it is rewritten as members come and go, not
// fsynced, and removed when the agent leaves gracefully (a left agent
// rejoins only through -join).
const (
	// Under <data-dir>/gossip: one file per pool.
	lanSnapshotFile        = "lan-members.json"
	wanSnapshotFile        = "wan-members.json"
	memberSnapshotInterval = time.Second
)

// memberSnapshotPath is where the member snapshot named file is kept, ""
// without a data dir.
func (p *Pools) memberSnapshotPath(file string) string {
	if p.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(p.cfg.DataDir, "gossip", file)
}

// joinAddrs returns the addresses a join loop tries: the configured ones
// and those of the member snapshot at path, without repeats.
func (p *Pools) joinAddrs(configured []string, path string) []string {
	addrs := slices.Clone(configured)
	known, err := loadMemberSnapshot(path)
	if err != nil {
		p.logger.Warn("ignoring the remembered gossip members", "err", err)
	}
	for _, addr := range known {
		if !slices.Contains(addrs, addr) {
			addrs = append(addrs, addr)
		}
	}
	if len(known) > 0 {
		p.logger.Info("rejoining remembered gossip members", "members", len(known), "path", path)
	}
	return addrs
}

func loadMemberSnapshot(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read member snapshot: %w", err)
	}
	var addrs []string
	if err := json.Unmarshal(data, &addrs); err != nil {
		return nil, fmt.Errorf("member snapshot %s: %w", path, err)
	}
	return addrs, nil
}

// otherMembers returns the gossip addresses of the alive members of p other
// than this agent, sorted.
func otherMembers(g *gossip.Pool) []string {
	self := g.LocalMember().Name
	var out []string
	for _, m := range g.Members() {
		if m.Name != self && m.Status == gossip.StatusAlive {
			out = append(out, net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.Port))))
		}
	}
	slices.Sort(out)
	return out
}

// memberSnapshotLoop rewrites the member snapshot of p at path whenever the
// set of other alive members changed, checking every
// memberSnapshotInterval, until ctx ends. An empty set is not written: an
// agent cut off from everyone should still remember where the others were.
// The list is built only after a member event: with a thousand members,
// building it every second on every agent was a tenth of an idle agent's
// CPU.
func (p *Pools) memberSnapshotLoop(ctx context.Context, g *gossip.Pool, path string) {
	last, _ := loadMemberSnapshot(path)
	t := time.NewTicker(memberSnapshotInterval)
	defer t.Stop()
	var seen uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := g.Version()
		if v == seen {
			continue
		}
		now := otherMembers(g)
		if p.leaving.Load() || len(now) == 0 || slices.Equal(now, last) {
			seen = v
			continue
		}
		if err := writeMemberSnapshot(path, now); err != nil {
			p.logger.Warn("saving the gossip members", "err", err)
			continue // and try again on the next tick
		}
		seen, last = v, now
	}
}

func writeMemberSnapshot(path string, addrs []string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("member snapshot dir: %w", err)
	}
	data, err := json.Marshal(addrs)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write member snapshot: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write member snapshot: %w", err)
	}
	return nil
}

// forgetMembers removes the member snapshots, after a graceful leave.
func (p *Pools) forgetMembers() {
	for _, file := range []string{lanSnapshotFile, wanSnapshotFile} {
		path := p.memberSnapshotPath(file)
		if path == "" {
			return
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.logger.Warn("removing the gossip member snapshot", "path", path, "err", err)
		}
	}
}

// startJoin starts the loops, owned by wg, that join pool g (through
// configured and the members remembered in the snapshot file) and keep
// its member snapshot.
func (p *Pools) startJoin(ctx context.Context, wg *sync.WaitGroup, g *gossip.Pool, kind gossip.Kind, configured []string, file string) {
	path := p.memberSnapshotPath(file)
	if addrs := p.joinAddrs(configured, path); len(addrs) > 0 {
		wg.Go(func() { p.joinLoop(ctx, g, kind, addrs) })
	}
	if path != "" {
		wg.Go(func() { p.memberSnapshotLoop(ctx, g, path) })
	}
}

// joinLoop joins pool g through addrs until another member is found,
// RetryMax attempts were made, or ctx ends. Agents started together race
// (the first attempt often reaches a server not yet up), so the first
// retries come quickly: after min(1s, RetryInterval), doubling up to
// RetryInterval. Joining only itself (its own address among addrs, the
// others down) does not count: the agent would sit alone, so it keeps
// trying.
func (p *Pools) joinLoop(ctx context.Context, g *gossip.Pool, kind gossip.Kind, addrs []string) {
	pool := kind.String()
	wait := min(firstJoinRetry, p.cfg.RetryInterval)
	for attempt := 1; ; attempt++ {
		n, err := g.Join(ctx, addrs)
		if err == nil && len(otherMembers(g)) == 0 {
			err = errors.New("only this agent answered")
		}
		if err == nil {
			p.logger.Info("joined the cluster", "pool", pool, "answered", n, "attempt", attempt)
			return
		}
		if ctx.Err() != nil {
			return
		}
		if p.cfg.RetryMax > 0 && attempt >= p.cfg.RetryMax {
			p.logger.Error("giving up joining the cluster", "pool", pool, "attempts", attempt, "err", err)
			return
		}
		p.logger.Warn("join failed, will retry", "pool", pool, "attempt", attempt, "retry_in", wait, "err", err)
		if !clock.Sleep(ctx, wait) {
			return
		}
		wait = min(2*wait, p.cfg.RetryInterval)
	}
}

// firstJoinRetry is the wait before the first retry of a join.
const firstJoinRetry = time.Second
