package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cairndns/cairn/consensus"
	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// node is one Raft server of the write measurement.
type node struct {
	raft      *raft.Raft
	store     store
	transport *raft.NetworkTransport
}

// raftConfig is Raft's configuration as consensus.New makes it: cairn's
// timers, Raft's defaults for snapshots (every 8192 entries or 2 minutes,
// keeping 10240 behind), so the log is compacted during a long run as it
// is in production.
func raftConfig(id string) *raft.Config {
	cc := consensus.DefaultConfig()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	rc.HeartbeatTimeout = cc.HeartbeatTimeout
	rc.ElectionTimeout = cc.ElectionTimeout
	rc.LeaderLeaseTimeout = cc.LeaderLeaseTimeout
	rc.CommitTimeout = cc.CommitTimeout
	rc.NoLegacyTelemetry = true
	rc.Logger = hclog.NewNullLogger()
	return rc
}

// startCluster starts three Raft servers with stores of kind under work,
// bootstrapped together, and returns them once one leads.
func startCluster(ctx context.Context, work string, kind storeKind) (nodes []*node, leader *raft.Raft, err error) {
	defer func() {
		if err != nil {
			stopCluster(nodes)
			nodes = nil
		}
	}()
	var conf raft.Configuration
	dirs := make([]string, 3)
	for i := range 3 {
		if dirs[i], err = os.MkdirTemp(work, kind.name+"-s"); err != nil {
			return nodes, nil, err
		}
		n := &node{}
		nodes = append(nodes, n)
		if n.store, err = kind.open(dirs[i]); err != nil {
			return nodes, nil, err
		}
		n.transport, err = raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 10*time.Second, hclog.NewNullLogger())
		if err != nil {
			return nodes, nil, err
		}
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(fmt.Sprintf("s%d", i+1)), Address: n.transport.LocalAddr()})
	}
	for i, n := range nodes {
		rc := raftConfig(fmt.Sprintf("s%d", i+1))
		snaps, err := raft.NewFileSnapshotStoreWithLogger(dirs[i], 2, rc.Logger)
		if err != nil {
			return nodes, nil, err
		}
		if err := raft.BootstrapCluster(rc, n.store, n.store, snaps, n.transport, conf); err != nil {
			return nodes, nil, fmt.Errorf("bootstrap: %w", err)
		}
		if n.raft, err = raft.NewRaft(rc, benchFSM{}, n.store, n.store, snaps, n.transport); err != nil {
			return nodes, nil, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				return nodes, n.raft, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nodes, nil, fmt.Errorf("no leader within 30s: %w", context.Cause(ctx))
}

func stopCluster(nodes []*node) {
	for _, n := range nodes {
		if n.raft != nil {
			n.raft.Shutdown().Error()
		}
		if n.transport != nil {
			n.transport.Close()
		}
		if n.store != nil {
			n.store.Close()
		}
	}
}

// measureWrites runs appliers goroutines applying entries on the leader of
// a fresh cluster for cfg.duration, after a short warm-up.
func measureWrites(ctx context.Context, cfg config, work string, kind storeKind, appliers int, res *results) error {
	nodes, leader, err := startCluster(ctx, work, kind)
	if err != nil {
		return err
	}
	defer stopCluster(nodes)

	apply := func(until time.Time) (lat []time.Duration, errs int, last error) {
		data := entryData(0, cfg.size)
		for time.Now().Before(until) && ctx.Err() == nil {
			t0 := time.Now()
			if err := leader.Apply(data, 10*time.Second).Error(); err != nil {
				errs, last = errs+1, err
				continue
			}
			lat = append(lat, time.Since(t0))
		}
		return lat, errs, last
	}
	apply(time.Now().Add(cfg.duration / 10))

	var (
		mu    sync.Mutex
		all   []time.Duration
		errs  int
		last  error
		wg    sync.WaitGroup
		start = time.Now()
		until = start.Add(cfg.duration)
	)
	for range appliers {
		wg.Go(func() {
			l, e, le := apply(until)
			mu.Lock()
			defer mu.Unlock()
			all, errs = append(all, l...), errs+e
			if le != nil {
				last = le
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(all) == 0 {
		return fmt.Errorf("no write succeeded (%d failed, last: %w)", errs, last)
	}
	slices.Sort(all)
	row := fmt.Sprintf("writes, %d applier(s): per s / p50 / p99", appliers)
	v := fmt.Sprintf("%.0f/s / %.1f ms / %.1f ms", float64(len(all))/elapsed.Seconds(), loopback.Ms(all, 0.5), loopback.Ms(all, 0.99))
	if errs > 0 {
		v += fmt.Sprintf(" (%d failed: %v)", errs, last)
	}
	res.set(row, kind.name, v)
	return nil
}

// benchFSM applies nothing: the measurement is of the log.
type benchFSM struct{}

func (benchFSM) Apply(*raft.Log) any                 { return nil }
func (benchFSM) Snapshot() (raft.FSMSnapshot, error) { return benchSnapshot{}, nil }
func (benchFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type benchSnapshot struct{}

func (benchSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (benchSnapshot) Release()                             {}
