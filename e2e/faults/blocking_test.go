package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// blockingWait is the wait of the blocking reads of the
// blocking-read-leader-change scenario.
const blockingWait = 10 * time.Second

// blockingReadsAcrossLeaderChange (issue 28): blocking reads of a key no
// one writes wait at its current index, through every client and every
// follower server, while the leader is killed and restarted. Each must end
// with a 200 and the current index about when its wait does: not a 500 on
// a follower, nor a 503 on a client, after its wait plus the hold.
func blockingReadsAcrossLeaderChange(r *run) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := &http.Client{Timeout: blockingWait + 30*time.Second}
	first := r.c.clients[0]
	if code, body, err := call(ctx, client, http.MethodPut, first.httpURL()+"/v1/kv/issue28-blocking", "still"); err != nil || code != http.StatusOK {
		r.t.Fatalf("PUT the key through %s: %d %s %v", first.name, code, body, err)
	}
	index := func(a *agent) (uint64, error) {
		resp, err := client.Get(a.httpURL() + "/v1/kv/issue28-blocking")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET the key on %s: %d", a.name, resp.StatusCode)
		}
		return strconv.ParseUint(resp.Header.Get("X-Consul-Index"), 10, 64)
	}
	idx, err := index(first)
	if err != nil {
		r.t.Fatal(err)
	}
	readers := append([]*agent{}, r.c.clients...)
	for _, s := range r.c.servers {
		if s != r.leader {
			readers = append(readers, s)
		}
	}
	type answer struct {
		code    int
		body    string
		index   string
		elapsed time.Duration
		err     error
	}
	answers := make([]answer, len(readers))
	var wg sync.WaitGroup
	start := time.Now()
	for i, a := range readers {
		wg.Go(func() {
			url := fmt.Sprintf("%s/v1/kv/issue28-blocking?index=%d&wait=%s", a.httpURL(), idx, blockingWait)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				answers[i].err = err
				return
			}
			resp, err := client.Do(req)
			answers[i].elapsed = time.Since(start)
			if err != nil {
				answers[i].err = err
				return
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			answers[i].code, answers[i].body, answers[i].index = resp.StatusCode, strings.TrimSpace(string(body)), resp.Header.Get("X-Consul-Index")
		})
	}
	time.Sleep(blockingWait / 3) // the reads wait on the leader by now
	l := r.leader
	r.target = r.describe(l) + " under blocking reads"
	r.faultAt = r.mark("kill -9 " + l.name + " during blocking reads")
	r.c.kill(l)
	wg.Wait()
	r.healAt = r.mark("restart " + l.name)
	r.c.start(l)
	// The wait, the server's jitter (1/16), and some slack for a loaded
	// machine; a second wait on the new leader (issue 28) takes the
	// reads past it by seconds.
	bound := blockingWait + blockingWait/16 + 3*time.Second
	for i, a := range readers {
		got := answers[i]
		switch {
		case got.err != nil:
			r.t.Errorf("blocking read through %s: %v after %s", a.name, got.err, got.elapsed.Round(time.Millisecond))
		case got.code != http.StatusOK:
			r.t.Errorf("blocking read through %s across the leader's death: HTTP %d %s after %s, want 200", a.name, got.code, got.body, got.elapsed.Round(time.Millisecond))
		case got.elapsed > bound:
			r.t.Errorf("blocking read of %s through %s took %s, want at most %s", blockingWait, a.name, got.elapsed.Round(time.Millisecond), bound)
		case got.index != strconv.FormatUint(idx, 10):
			r.t.Errorf("blocking read through %s: index %s, want the current %d", a.name, got.index, idx)
		default:
			r.t.Logf("blocking read through %s: 200 at index %s after %s", a.name, got.index, got.elapsed.Round(time.Millisecond))
		}
	}
}
