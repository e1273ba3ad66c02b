package agent

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
	"time"

	"github.com/cairndns/cairn/gossip"
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
func (a *Agent) memberSnapshotPath(file string) string {
	if a.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(a.cfg.DataDir, "gossip", file)
}

// joinAddrs returns the addresses a join loop tries: the configured ones
// and those of the member snapshot at path, without repeats.
func (a *Agent) joinAddrs(configured []string, path string) []string {
	addrs := slices.Clone(configured)
	known, err := loadMemberSnapshot(path)
	if err != nil {
		a.logger.Warn("ignoring the remembered gossip members", "err", err)
	}
	for _, addr := range known {
		if !slices.Contains(addrs, addr) {
			addrs = append(addrs, addr)
		}
	}
	if len(known) > 0 {
		a.logger.Info("rejoining remembered gossip members", "members", len(known), "path", path)
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
func otherMembers(p *gossip.Pool) []string {
	self := p.LocalMember().Name
	var out []string
	for _, m := range p.Members() {
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
func (a *Agent) memberSnapshotLoop(ctx context.Context, p *gossip.Pool, path string) {
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
		v := p.Version()
		if v == seen {
			continue
		}
		now := otherMembers(p)
		if a.leaving.Load() || len(now) == 0 || slices.Equal(now, last) {
			seen = v
			continue
		}
		if err := writeMemberSnapshot(path, now); err != nil {
			a.logger.Warn("saving the gossip members", "err", err)
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
func (a *Agent) forgetMembers() {
	for _, file := range []string{lanSnapshotFile, wanSnapshotFile} {
		path := a.memberSnapshotPath(file)
		if path == "" {
			return
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			a.logger.Warn("removing the gossip member snapshot", "path", path, "err", err)
		}
	}
}
