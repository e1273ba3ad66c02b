package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
)

// measureRestart writes a log of cfg.entries entries (the first a
// configuration, as a bootstrapped log starts) straight into a store, then
// times what a server's start does with it: open the store, and
// raft.NewRaft, which reads the last entry and then every entry after the
// last snapshot (here all of them) for configuration changes.
func measureRestart(cfg config, work string, kind storeKind, res *results) error {
	dir, err := os.MkdirTemp(work, kind.name+"-restart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := kind.open(dir)
	if err != nil {
		return err
	}
	conf := raft.Configuration{Servers: []raft.Server{{ID: "s1", Address: "127.0.0.1:1"}}}
	start := time.Now()
	batch := make([]*raft.Log, 0, cfg.batch)
	for i := uint64(1); i <= uint64(cfg.entries); i++ {
		l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: entryData(i, cfg.size), AppendedAt: time.Now()}
		if i == 1 {
			l.Type, l.Data = raft.LogConfiguration, raft.EncodeConfiguration(conf)
		}
		batch = append(batch, l)
		if len(batch) == cfg.batch || i == uint64(cfg.entries) {
			if err := st.StoreLogs(batch); err != nil {
				st.Close()
				return fmt.Errorf("store logs up to %d: %w", i, err)
			}
			batch = batch[:0]
		}
	}
	err = st.SetUint64([]byte("CurrentTerm"), 1)
	written := time.Since(start)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	used, apparent := diskUsage(dir)
	res.set(fmt.Sprintf("restart log: write %d entries in batches of %d", cfg.entries, cfg.batch), kind.name,
		fmt.Sprintf("%.1f s (%.0f entries/s)", written.Seconds(), float64(cfg.entries)/written.Seconds()))
	res.set("restart log: on disk (allocated / apparent)", kind.name, mib(used)+" / "+mib(apparent))

	for _, cold := range []bool{false, true} {
		if cold && !canDropCache {
			continue
		}
		var opened, ready time.Duration
		for i := range cfg.restarts {
			if cold {
				if err := dropDirCache(dir); err != nil {
					return err
				}
			}
			o, r, err := restartOnce(dir, kind, uint64(cfg.entries))
			if err != nil {
				return err
			}
			if i == 0 || r < ready {
				opened, ready = o, r
			}
		}
		cache := "in page cache"
		if cold {
			cache = "dropped from page cache"
		}
		res.set("restart, files "+cache+": open / NewRaft ready", kind.name,
			fmt.Sprintf("%.0f ms / %.0f ms", ms(opened), ms(ready)))
	}
	return nil
}

// restartOnce opens the store in dir and starts Raft on it, returning the
// time to open and the time until NewRaft returned.
func restartOnce(dir string, kind storeKind, want uint64) (opened, ready time.Duration, err error) {
	start := time.Now()
	st, err := kind.open(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("reopen: %w", err)
	}
	defer st.Close()
	opened = time.Since(start)
	_, trans := raft.NewInmemTransport("127.0.0.1:1")
	r, err := raft.NewRaft(raftConfig("s1"), benchFSM{}, st, st, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		return 0, 0, fmt.Errorf("start raft: %w", err)
	}
	ready = time.Since(start)
	last := r.LastIndex()
	if err := r.Shutdown().Error(); err != nil {
		return 0, 0, fmt.Errorf("stop raft: %w", err)
	}
	if last != want {
		return 0, 0, fmt.Errorf("raft's last index is %d, want %d", last, want)
	}
	return opened, ready, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// dropDirCache drops the files of dir from the page cache.
func dropDirCache(dir string) error {
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return dropCache(path)
	})
	if err != nil {
		return fmt.Errorf("drop the page cache: %w", err)
	}
	return nil
}
