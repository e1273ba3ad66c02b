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
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cairndns/cairn/examples/bench/internal/loopback"
	"github.com/cairndns/cairn/rpc"
	"github.com/cairndns/cairn/tlsutil"
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
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAOptions{})
	if err != nil {
		return err
	}
	files := map[string]string{tlsutil.CAFileName: caPEM}
	for _, c := range []struct {
		name   string
		server bool
	}{{"server", true}, {"client", false}} {
		cert, key, err := tlsutil.GenerateCert(tlsutil.CertOptions{CA: caPEM, CAKey: caKey, Server: c.server, Datacenter: "dc1"})
		if err != nil {
			return err
		}
		files[c.name+".pem"], files[c.name+"-key.pem"] = cert, key
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o600); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf(`tls {
  defaults {
    ca_file = %q
    cert_file = %q
    key_file = %q
    verify_incoming = true
    verify_outgoing = true
  }
  internal_rpc { verify_server_hostname = true }
}
# The connections stand for as many agents, all from one address here.
limits { rpc_max_conns_per_client = 0 }
`, filepath.Join(work, tlsutil.CAFileName), filepath.Join(work, "server.pem"), filepath.Join(work, "server-key.pem"))
	if err := os.WriteFile(filepath.Join(work, "server.hcl"), []byte(conf), 0o600); err != nil {
		return err
	}
	const ip = "127.0.77.1"
	cmd := exec.CommandContext(ctx, bin, "agent", "-server", "-node", "s1", "-bind", ip, "-client", ip,
		"-data-dir", filepath.Join(work, "data"), "-config-file", filepath.Join(work, "server.hcl"), "-log-level", "warn")
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

	client, err := tlsutil.NewConfigurator(tlsutil.Config{
		CAFile: filepath.Join(work, tlsutil.CAFileName), CertFile: filepath.Join(work, "client.pem"), KeyFile: filepath.Join(work, "client-key.pem"),
		VerifyOutgoing: true, VerifyServerHostname: true, Datacenter: "dc1", Domain: "cluster", MinVersion: "tls12",
	})
	if err != nil {
		return err
	}
	addr := ip + ":8300"
	pc := rpc.DefaultPoolConfig()
	pc.TLS, pc.Datacenter = client.OutgoingRPC, "dc1"
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
			return fmt.Errorf("the server did not answer over TLS within 30s (log in %s)", logf.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}

	measure := func(what string) error {
		cpu0, _, _, err := loopback.Sample(cmd.Process.Pid)
		if err != nil {
			return err
		}
		select {
		case <-time.After(idle):
		case <-ctx.Done():
			return ctx.Err()
		}
		cpu1, rss, threads, err := loopback.Sample(cmd.Process.Pid)
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
