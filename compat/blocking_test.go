package compat_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/agenttest"
)

// This file tests blocking queries over raw HTTP, on a server agent (which
// blocks on its own store) and on a client agent (whose servers block for
// it over RPC).

// blockingAgents starts the agents the blocking tests run against: a dev
// server, and a client of a three-server cluster. Each returns the base URL.
func blockingAgents(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"server": func(t *testing.T) string {
			a := agenttest.Start(t, agenttest.Config(t))
			return "http://" + a.HTTPAddr().String()
		},
		"client": func(t *testing.T) string {
			c := agenttest.StartCluster(t, 3)
			cl := agenttest.Start(t, agenttest.ClientConfig(t, "c1", c.GossipAddr(0), c.GossipAddr(1), c.GossipAddr(2)))
			base := "http://" + cl.HTTPAddr().String()
			// Ready once the cluster has settled: the client's own node is
			// in the catalog (a server and a leader are known, its first
			// sync went through), each server's first sync put its cairn
			// service in, and the leader gave all four nodes their gossip
			// check. No write is then under way to move the index behind
			// the tests' back.
			deadline := time.Now().Add(30 * time.Second)
			for {
				code, body, _ := get(t, base+"/v1/catalog/node/c1")
				_, cairn, _ := get(t, base+"/v1/catalog/service/cairn")
				_, passing, _ := get(t, base+"/v1/health/state/passing")
				if code == http.StatusOK && body != "null\n" && strings.Count(cairn, `"ServiceID":"cairn"`) == 3 &&
					strings.Count(passing, `"CheckID":"serfHealth"`) == 4 {
					return base
				}
				if time.Now().After(deadline) {
					t.Fatalf("client agent not synced within 30s: %d %s", code, body)
				}
				pause(t, 50*time.Millisecond)
			}
		},
	}
}

// pause waits d on a timer bound to the test's context: the one place
// these tests poll (for a cluster to form).
func pause(t *testing.T, d time.Duration) {
	select {
	case <-t.Context().Done():
	case <-time.After(d):
	}
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// index reads a response's X-Consul-Index.
func index(t *testing.T, h http.Header) uint64 {
	t.Helper()
	idx, err := strconv.ParseUint(h.Get("X-Consul-Index"), 10, 64)
	if err != nil || idx == 0 {
		t.Fatalf("X-Consul-Index: %q, want a positive integer", h.Get("X-Consul-Index"))
	}
	return idx
}

func put(t *testing.T, url, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %d %s", url, resp.StatusCode, b)
	}
}

func register(t *testing.T, base, id, name string) {
	t.Helper()
	put(t, base+"/v1/agent/service/register", fmt.Sprintf(`{"ID":%q,"Name":%q,"Port":80}`, id, name))
}

func TestBlockingQueries(t *testing.T) {
	t.Parallel()
	for name, start := range blockingAgents(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := start(t)
			register(t, base, "web1", "web")
			path := base + "/v1/health/service/web"
			_, _, h := get(t, path)
			cur := index(t, h)
			for _, hdr := range []string{"X-Consul-KnownLeader", "X-Consul-LastContact"} {
				if h.Get(hdr) == "" {
					t.Errorf("no %s header", hdr)
				}
			}
			if h.Get("X-Consul-KnownLeader") != "true" {
				t.Errorf("X-Consul-KnownLeader: got %q, want true", h.Get("X-Consul-KnownLeader"))
			}

			t.Run("ImmediateWhenBehind", func(t *testing.T) {
				start := time.Now()
				_, _, h := get(t, fmt.Sprintf("%s?index=%d&wait=1m", path, cur-1))
				if got := index(t, h); got != cur {
					t.Errorf("index: got %d, want %d", got, cur)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("an index behind waited %s, want an answer at once", d)
				}
			})

			t.Run("TimeoutSameIndex", func(t *testing.T) {
				start := time.Now()
				_, body, h := get(t, fmt.Sprintf("%s?index=%d&wait=300ms", path, cur))
				if d := time.Since(start); d < 300*time.Millisecond {
					t.Errorf("returned after %s, want to wait out the 300ms", d)
				}
				if got := index(t, h); got != cur {
					t.Errorf("index after the wait: got %d, want the same %d", got, cur)
				}
				var entries []map[string]any
				if err := json.Unmarshal([]byte(body), &entries); err != nil || len(entries) != 1 {
					t.Errorf("body after the wait: %s (%v), want web1", body, err)
				}
			})

			t.Run("ReturnsOnChange", func(t *testing.T) {
				type result struct {
					body string
					h    http.Header
				}
				// Each blocking read returns on a change past its index; an
				// unrelated change (a check's output, the node's gossip
				// check) may come first, so block again until web2 is
				// in, each answer moving the index forward.
				done := make(chan result, 1)
				block := func(from uint64) {
					go func() {
						_, body, h := get(t, fmt.Sprintf("%s?index=%d&wait=1m", path, from))
						done <- result{body, h}
					}()
				}
				block(cur)
				register(t, base, "web2", "web")
				deadline := time.After(30 * time.Second)
				for {
					var res result
					select {
					case res = <-done:
					case <-deadline:
						t.Fatal("blocking query did not return web2 within 30s of its registration")
					}
					got := index(t, res.h)
					if got <= cur {
						t.Fatalf("index: got %d, want past %d", got, cur)
					}
					cur = got
					if strings.Contains(res.body, `"web2"`) {
						break
					}
					block(cur)
				}
			})

			t.Run("NeverBackwards", func(t *testing.T) {
				// Changes elsewhere in the catalog wake the query; whatever it
				// answers, the index never drops below the one asked.
				for i := range 3 {
					register(t, base, fmt.Sprintf("other%d", i), "other")
					_, _, h := get(t, fmt.Sprintf("%s?index=%d&wait=200ms", path, cur))
					if got := index(t, h); got < cur {
						t.Fatalf("round %d: index went back from %d to %d", i, cur, got)
					}
					_, _, h = get(t, base+"/v1/catalog/services")
					svcIdx := index(t, h)
					_, _, h = get(t, fmt.Sprintf("%s/v1/catalog/services?index=%d&wait=200ms", base, svcIdx))
					if got := index(t, h); got < svcIdx {
						t.Fatalf("round %d: catalog services index went back from %d to %d", i, svcIdx, got)
					}
				}
			})

			t.Run("BadParams", func(t *testing.T) {
				for _, q := range []string{"index=abc", "wait=10", "wait=-1s", "stale&consistent"} {
					code, body, _ := get(t, path+"?"+q)
					if code != http.StatusBadRequest {
						t.Errorf("?%s: got %d %s, want 400", q, code, body)
					}
				}
				if code, _, _ := get(t, path+"?nosuchparam=1&pretty"); code != http.StatusOK {
					t.Errorf("an unknown parameter: got %d, want it ignored", code)
				}
			})
		})
	}
}

// TestBlockingResetOnServer: on a server, an index its store never
// reached (a client's from another server, or from before a restore) is
// answered at once with the store's lower index, so the client starts
// over.
func TestBlockingResetOnServer(t *testing.T) {
	t.Parallel()
	a := agenttest.Start(t, agenttest.Config(t))
	base := "http://" + a.HTTPAddr().String()
	_, _, h := get(t, base+"/v1/catalog/nodes")
	cur := index(t, h)
	start := time.Now()
	_, _, h = get(t, fmt.Sprintf("%s/v1/catalog/nodes?index=%d&wait=1m", base, cur+1_000_000))
	if got := index(t, h); got != cur {
		t.Errorf("index: got %d, want the store's %d", got, cur)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("an index ahead of the store waited %s, want an answer at once", d)
	}
}
