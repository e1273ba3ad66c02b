// Command tlsidle measures what idle mutual-TLS connections cost a server:
// it starts one server agent (a process, -cairn) with TLS required on its
// server port, opens -conns connections to it as client agents do (each a
// TLS session with a client certificate, then one RPC), leaves them idle,
// and reports the server's CPU and RSS over -idle, beside the same server
// with no connection at all.
//
//	go build -o /tmp/cairn ./cmd/cairn
//	go run ./examples/bench/tlsidle -cairn /tmp/cairn [-conns 1000] [-idle 60s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/rpc"
)

func main() {
	bin := flag.String("cairn", "", "cairn binary")
	conns := flag.Int("conns", 1000, "idle TLS connections to open")
	idle := flag.Duration("idle", 60*time.Second, "how long to measure each phase")
	flag.Parse()
	loopback.Main("tlsidle", func(ctx context.Context) error { return run(ctx, *bin, *conns, *idle) })
}

func run(ctx context.Context, path string, conns int, idle time.Duration) error {
	bin, work, err := loopback.Prepare(path, "tlsidle")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// The connections stand for as many agents, all from one address here.
	srv, err := loopback.StartTLSServer(ctx, bin, work, "127.0.77.1", "warn", "limits { rpc_max_conns_per_client = 0 }\n")
	if err != nil {
		return err
	}
	defer srv.Stop()
	addr := srv.Addr
	pc := rpc.DefaultPoolConfig()
	pc.TLS, pc.Datacenter = srv.Client.OutgoingRPC, "dc1"
	call := func(p *rpc.Pool) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var reply rpc.LeaderResponse
		return p.Call(cctx, addr, rpc.MethodStatusLeader, &rpc.StatusRequest{}, &reply)
	}
	probe, err := rpc.NewPool(pc, nil)
	if err != nil {
		return err
	}
	defer probe.Close()
	deadline := time.Now().Add(30 * time.Second)
	for call(probe) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not answer over TLS within 30s (log in %s)", srv.Log)
		}
		time.Sleep(200 * time.Millisecond)
	}

	measure := func(what string) error {
		cpu0, _, _, err := loopback.Sample(srv.PID())
		if err != nil {
			return err
		}
		select {
		case <-time.After(idle):
		case <-ctx.Done():
			return ctx.Err()
		}
		cpu1, rss, threads, err := loopback.Sample(srv.PID())
		if err != nil {
			return err
		}
		fmt.Printf("%-28s cpu %6.2f%% of a core   rss %6.1f MiB   threads %d\n", what,
			100*float64(cpu1-cpu0)/float64(idle), float64(rss)/1024, threads)
		return nil
	}
	fmt.Printf("server on %s, TLS required (verify_incoming, verify_server_hostname); %s per phase\n", addr, idle)
	if err := measure("no client connection"); err != nil {
		return err
	}
	pools := make([]*rpc.Pool, 0, conns)
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	start := time.Now()
	for range conns {
		p, err := rpc.NewPool(pc, nil)
		if err != nil {
			return err
		}
		pools = append(pools, p)
		if err := call(p); err != nil {
			return fmt.Errorf("connection %d: %w", len(pools), err)
		}
	}
	fmt.Printf("opened %d TLS sessions (handshake and one RPC each) in %s\n", conns, time.Since(start).Round(time.Millisecond))
	return measure(fmt.Sprintf("%d idle TLS sessions", conns))
}
