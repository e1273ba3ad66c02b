package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
)

// profile starts taking a CPU profile of each of cairn's servers when
// -profile names a directory, and returns the function that ends them
// and writes each to dir/<name>-s<i>.pprof. Other systems, or no
// -profile, take none.
func profile(ctx context.Context, hc *http.Client, o options, s *system, c *cluster, name string) (stop func()) {
	if o.profile == "" || s.name != "cairn" {
		return func() {}
	}
	if err := os.MkdirAll(o.profile, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "writes: -profile:", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, base := range c.bases {
		wg.Go(func() {
			// As long as the measured run: a cancelled profile request
			// writes nothing.
			path := filepath.Join(o.profile, fmt.Sprintf("%s-s%d.pprof", name, i+1))
			if err := fetchProfile(ctx, hc, base, int(o.duration.Seconds()), path); err != nil {
				fmt.Fprintf(os.Stderr, "writes: profile of %s: %v\n", base, err)
			}
		})
	}
	return func() { wg.Wait(); cancel() }
}

func fetchProfile(ctx context.Context, hc *http.Client, base string, seconds int, path string) error {
	if seconds < 1 {
		seconds = 1
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds), nil)
	if err != nil {
		return err
	}
	// The bench's client gives up after 30s; a profile takes as long as
	// the run.
	long := *hc
	long.Timeout = 0
	resp, err := long.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
