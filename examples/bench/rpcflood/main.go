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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil"
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
	client, err := writeTLS(work)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "agent", "-server", "-node", "s1", "-bind", serverIP, "-client", serverIP,
		"-data-dir", filepath.Join(work, "data"), "-config-file", filepath.Join(work, "server.hcl"), "-log-level", "error")
	logf, err := os.Create(filepath.Join(work, "server.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	addr := serverIP + ":8300"
	pc := rpc.DefaultPoolConfig()
	pc.TLS, pc.Datacenter, pc.SourceAddr = client.OutgoingRPC, "dc1", from
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
			return fmt.Errorf("the server did not answer within 60s (log in %s): %w", logf.Name(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	first.Close()
	time.Sleep(2 * time.Second) // let the server settle after its election
	before, err := sample(ctx, cmd.Process.Pid)
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
	during, err := sample(ctx, cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("blocking queries held: %.0f, refused: %d, other errors: %d\n", held, refused.Load(), failed.Load())
	fmt.Printf("%-34s %s\n", "while the attacker holds them:", during)
	return nil
}

// writeTLS writes a CA, a server certificate, a client certificate and
// the server's configuration (TLS required) into work, and returns the
// client's TLS.
func writeTLS(work string) (*tlsutil.Configurator, error) {
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAOptions{})
	if err != nil {
		return nil, err
	}
	files := map[string]string{tlsutil.CAFileName: caPEM}
	for _, c := range []struct {
		name   string
		server bool
	}{{"server", true}, {"client", false}} {
		cert, key, err := tlsutil.GenerateCert(tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Server: c.server, Datacenter: "dc1"})
		if err != nil {
			return nil, err
		}
		files[c.name+".pem"], files[c.name+"-key.pem"] = cert, key
	}
	files["server.hcl"] = fmt.Sprintf(`tls {
  defaults {
    ca_file = %q
    cert_file = %q
    key_file = %q
    verify_incoming = true
    verify_outgoing = true
  }
  internal_rpc { verify_server_hostname = true }
}
`, filepath.Join(work, tlsutil.CAFileName), filepath.Join(work, "server.pem"), filepath.Join(work, "server-key.pem"))
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o600); err != nil {
			return nil, err
		}
	}
	return tlsutil.NewConfigurator(tlsutil.Config{
		CAFile: filepath.Join(work, tlsutil.CAFileName), CertFile: filepath.Join(work, "client.pem"), KeyFile: filepath.Join(work, "client-key.pem"),
		VerifyOutgoing: true, VerifyServerHostname: true, Datacenter: "dc1", Domain: "cluster", MinVersion: "tls12",
	})
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
