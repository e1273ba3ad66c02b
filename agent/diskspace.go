package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairndns/cairn/internal/diskfree"
)

// Free space in the data dir: a server that cannot write its Raft log
// takes no part in writes, so the agent warns before the disk is full
// (limits.data_dir_min_free_bytes) and reports what is left
// (cairn_data_dir_free_bytes, dataDirCollector).

// Pacing of the free-space check and of its warning while it lasts.
const (
	diskCheckEvery = 30 * time.Second
	diskWarnEvery  = time.Minute
)

// watchDiskSpace checks the data dir's free space every diskCheckEvery
// until ctx ends, and warns (at most every diskWarnEvery) while it is
// below the threshold. It does nothing without a data dir or a threshold.
func (a *Agent) watchDiskSpace(ctx context.Context) {
	min := uint64(a.cfg.Limits.DataDirMinFreeBytes)
	if a.cfg.DataDir == "" || min == 0 {
		return
	}
	t := time.NewTicker(diskCheckEvery)
	defer t.Stop()
	var warned time.Time
	for {
		sp, err := diskfree.Of(a.cfg.DataDir)
		switch {
		case err != nil:
			a.logger.Debug("cannot read the data dir's free space", "data_dir", a.cfg.DataDir, "err", err)
		case sp.Free < min && time.Since(warned) >= diskWarnEvery:
			warned = time.Now()
			a.logger.Warn("the data dir is nearly full: a server that cannot write its Raft log takes no part in writes",
				"data_dir", a.cfg.DataDir, "free_bytes", sp.Free, "total_bytes", sp.Total, "limits.data_dir_min_free_bytes", min)
		case sp.Free >= min && !warned.IsZero():
			warned = time.Time{}
			a.logger.Info("the data dir has room again", "data_dir", a.cfg.DataDir, "free_bytes", sp.Free)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

var descDataDirFree = prometheus.NewDesc("cairn_data_dir_free_bytes", "Free space in the agent's data dir, in bytes (what an unprivileged process may still write); see limits.data_dir_min_free_bytes.", nil, nil)

// dataDirCollector reports the data dir's free space at each scrape. It is
// unchecked (Describe sends nothing): without a data dir, or when the
// space cannot be read, the series is left out.
type dataDirCollector struct{ dir string }

func (dataDirCollector) Describe(chan<- *prometheus.Desc) {}

func (c dataDirCollector) Collect(ch chan<- prometheus.Metric) {
	if c.dir == "" {
		return
	}
	if sp, err := diskfree.Of(c.dir); err == nil {
		ch <- prometheus.MustNewConstMetric(descDataDirFree, prometheus.GaugeValue, float64(sp.Free))
	}
}

// register adds the parts' series to the agent's registry.
func (a *Agent) register(groups ...[]prometheus.Collector) error {
	for _, cs := range groups {
		if err := a.metrics.Register(cs...); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}
