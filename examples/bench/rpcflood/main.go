// Command rpcflood measures what one client address can make a server hold
// (issue 27, finding 7): it starts one server agent (a process, -cairn)
// with TLS required on its server port and the default limits, then, as a
// holder of a client certificate of the CA with no token, opens -conns
// connections from -from and spreads -queries blocking queries
// (Catalog.Services at the current index, a 10-minute wait) over those the
// server serves. It prints the server's goroutines, heap and RSS before
// the attack and while the attacker holds everything, with how many
// connections were served and how many queries held and refused.
//
//	go build -o /tmp/cairn ./cmd/cairn
//	go run ./examples/bench/rpcflood -cairn /tmp/cairn [-conns 1000] [-queries 8192]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/rpc"
)

const serverIP = "127.0.78.1"

func main() {
	bin := flag.String("cairn", "", "cairn binary")
	conns := flag.Int("conns", 1000, "connections the attacker opens")
	queries := flag.Int("queries", 8192, "blocking queries the attacker sends over the connections served")
	from := flag.String("from", "127.0.0.66", "the attacker's address")
	flag.Parse()
	loopback.Main("rpcflood", func(ctx context.Context) error { return run(ctx, *bin, *from, *conns, *queries) })
}

func run(ctx context.Context, path, from string, conns, queries int) error {
	bin, work, err := loopback.Prepare(path, "rpcflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	srv, err := loopback.StartTLSServer(ctx, bin, work, serverIP, "error", "")
	if err != nil {
		return err
	}
	defer srv.Stop()

	addr := srv.Addr
	pc := rpc.DefaultPoolConfig()
	pc.TLS, pc.Datacenter, pc.SourceAddr = srv.Client.OutgoingRPC, "dc1", from
	newPool := func() (*rpc.Pool, error) { return rpc.NewPool(pc, nil) }
	first, err := newPool()
	if err != nil {
		return err
	}
	var index rpc.ServicesResponse
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := first.Call(cctx, addr, rpc.MethodCatalogServices, &rpc.ServicesRequest{}, &index)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not answer within 60s (log in %s): %w", srv.Log, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	first.Close()
	time.Sleep(2 * time.Second) // let the server settle after its election
	before, err := sample(ctx, srv.PID())
	if err != nil {
		return err
	}
	fmt.Printf("server on %s, TLS required, default limits; attacker from %s\n", addr, from)
	fmt.Printf("%-34s %s\n", "before:", before)

	attack, stop := context.WithCancel(ctx)
	var calls sync.WaitGroup
	var pools []*rpc.Pool
	defer func() {
		stop()
		calls.Wait()
		for _, p := range pools {
			p.Close()
		}
	}()
	var live []*rpc.Pool
	var mu sync.Mutex
	var opening sync.WaitGroup
	sem := make(chan struct{}, 50)
	start := time.Now()
	for range conns {
		p, err := newPool()
		if err != nil {
			return err
		}
		pools = append(pools, p)
		sem <- struct{}{}
		opening.Go(func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if p.Probe(cctx, addr) == nil {
				mu.Lock()
				live = append(live, p)
				mu.Unlock()
			}
		})
	}
	opening.Wait()
	fmt.Printf("connections served: %d of %d (opened in %s)\n", len(live), conns, time.Since(start).Round(time.Millisecond))
	if len(live) == 0 {
		return errors.New("no connection served")
	}
	var refused, failed atomic.Int64
	for i := range queries {
		p := live[i%len(live)]
		calls.Go(func() {
			// Asked again at the index of each answer, as a watcher
			// does, so that a write of the server's own (its node's
			// check) cannot end the attack.
			idx := index.Index
			for attack.Err() == nil {
				args := &rpc.ServicesRequest{QueryOptions: rpc.QueryOptions{MinQueryIndex: idx, MaxQueryTime: 10 * time.Minute, AllowStale: true}}
				var reply rpc.ServicesResponse
				err := p.Call(attack, addr, rpc.MethodCatalogServices, args, &reply)
				switch {
				case attack.Err() != nil:
				case err == nil:
					idx = reply.Index
					continue
				case strings.Contains(err.Error(), "too many calls"):
					refused.Add(1)
				default:
					if failed.Add(1) == 1 {
						fmt.Println("first other error:", err)
					}
				}
				return
			}
		})
	}
	var held float64
	deadline = time.Now().Add(2 * time.Minute)
	for {
		m, err := metrics(ctx)
		if err != nil {
			return err
		}
		held = m[`cairn_rpc_blocking_queries{method="Catalog.Services"}`]
		if int(held)+int(refused.Load()+failed.Load()) >= queries || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	during, err := sample(ctx, srv.PID())
	if err != nil {
		return err
	}
	fmt.Printf("blocking queries held: %.0f, refused: %d, other errors: %d\n", held, refused.Load(), failed.Load())
	fmt.Printf("%-34s %s\n", "while the attacker holds them:", during)
	return nil
}

// sample is the server's goroutines and heap (its metrics) and RSS.
func sample(ctx context.Context, pid int) (string, error) {
	m, err := metrics(ctx)
	if err != nil {
		return "", err
	}
	_, rss, _, err := loopback.Sample(pid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("goroutines %6.0f   heap in use %6.1f MiB   rss %6.1f MiB",
		m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]/(1<<20), float64(rss)/1024), nil
}

// metrics reads the server's metrics: the value of each series, by its
// line's name and labels.
func metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+serverIP+":8500/v1/agent/metrics?format=prometheus", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}
