package diskfree

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Pacing of Watch's check and of its warning while it lasts.
const (
	checkEvery = 30 * time.Second
	warnEvery  = time.Minute
)

// Watch checks dir's free space every 30s until ctx ends, and warns (at
// most once a minute) while it is below min bytes: a server that cannot
// write its Raft log takes no part in writes. It does nothing without a
// dir or a min.
func Watch(ctx context.Context, dir string, min uint64, logger *slog.Logger) {
	if dir == "" || min == 0 {
		return
	}
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	var warned time.Time
	for {
		sp, err := Of(dir)
		switch {
		case err != nil:
			logger.Debug("cannot read the data dir's free space", "data_dir", dir, "err", err)
		case sp.Free < min && time.Since(warned) >= warnEvery:
			warned = time.Now()
			logger.Warn("the data dir is nearly full: a server that cannot write its Raft log takes no part in writes",
				"data_dir", dir, "free_bytes", sp.Free, "total_bytes", sp.Total, "limits.data_dir_min_free_bytes", min)
		case sp.Free >= min && !warned.IsZero():
			warned = time.Time{}
			logger.Info("the data dir has room again", "data_dir", dir, "free_bytes", sp.Free)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

var descFree = prometheus.NewDesc("cairn_data_dir_free_bytes", "Free space in the agent's data dir, in bytes (what an unprivileged process may still write); see limits.data_dir_min_free_bytes.", nil, nil)

// Collector reports dir's free space at each scrape. It is unchecked
// (Describe sends nothing): without a dir, or when the space cannot be
// read, the series is left out.
func Collector(dir string) prometheus.Collector { return collector{dir} }

type collector struct{ dir string }

func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	if c.dir == "" {
		return
	}
	if sp, err := Of(c.dir); err == nil {
		ch <- prometheus.MustNewConstMetric(descFree, prometheus.GaugeValue, float64(sp.Free))
	}
}
