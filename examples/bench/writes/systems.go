package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// system is one of the measured stores: how its three servers are started
// and how a write is sent to one of them.
type system struct {
	name string
	bin  string
	port int // the HTTP API's port on each server's address
	// args is server i's command line (without the binary), its data in
	// dir; ips are the three servers' addresses.
	args func(i int, ips []string, dir string) []string
	// ready says whether the servers at ips have one leader among them
	// and take writes.
	ready func(ctx context.Context, hc *http.Client, bases []string) bool
	// write builds the request for op's i-th write by writer w to the
	// server at base; nil when the system does not take op.
	write map[string]func(ctx context.Context, base string, w, i int) (*http.Request, error)
}

// value is every KV write's value: 100 bytes, as kvload writes.
var value = bytes.Repeat([]byte("v"), 100)

func kvKey(w, i int) string { return fmt.Sprintf("bench/w%03d/%08d", w, i) }

// consulWrites are the writes cairn and Consul take the same way: a KV PUT,
// and a service registration through the catalog endpoint. Both commit
// through Raft before answering 200. (An agent's /v1/agent/service/register
// would not measure the same thing: Consul's returns once the service is in
// the agent's local state and syncs it to the servers in the background.)
// Each writer registers on nodes of its own, 64 services a node, so a node
// never holds more than a real one would.
var consulWrites = map[string]func(ctx context.Context, base string, w, i int) (*http.Request, error){
	"kv": func(ctx context.Context, base string, w, i int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/kv/"+kvKey(w, i), bytes.NewReader(value))
	},
	"register": func(ctx context.Context, base string, w, i int) (*http.Request, error) {
		body := fmt.Sprintf(`{"Node":"bench-w%03d-n%06d","Address":"127.0.5.%d","Service":{"ID":"s%08d","Service":"bench-%d","Port":%d}}`,
			w, i/64, 1+w%250, i, i%16, 1024+i%60000)
		return http.NewRequestWithContext(ctx, http.MethodPut, base+"/v1/catalog/register", strings.NewReader(body))
	},
}

// consulReady holds when every server names the same leader and has all
// three as Raft peers: the same API in cairn and Consul.
func consulReady(ctx context.Context, hc *http.Client, bases []string) bool {
	want := ""
	for _, b := range bases {
		var leader string
		var peers []string
		if getJSON(ctx, hc, b+"/v1/status/leader", &leader) != nil || leader == "" || (want != "" && leader != want) {
			return false
		}
		if getJSON(ctx, hc, b+"/v1/status/peers", &peers) != nil || len(peers) != len(bases) {
			return false
		}
		want = leader
	}
	return true
}

// cairnSystem runs cairn's servers with their defaults but the addresses;
// debug serves their runtime profiles (for -profile).
func cairnSystem(bin string, debug bool) *system {
	return &system{name: "cairn", bin: bin, port: 8500, ready: consulReady, write: consulWrites,
		args: func(i int, ips []string, dir string) []string {
			a := []string{"agent", "-server", "-bootstrap-expect", "3", "-node", fmt.Sprintf("s%d", i+1),
				"-bind", ips[i], "-client", ips[i], "-data-dir", dir, "-retry-interval", "1s", "-log-level", "warn"}
			if debug {
				a = append(a, "-enable-debug")
			}
			for _, ip := range ips {
				a = append(a, "-retry-join", ip)
			}
			return a
		}}
}

// consulSystem runs Consul's servers with its defaults but the addresses:
// raft_multiplier stays 5, which changes election timing, not the write
// path.
func consulSystem(bin string) *system {
	return &system{name: "consul", bin: bin, port: 8500, ready: consulReady, write: consulWrites,
		args: func(i int, ips []string, dir string) []string {
			a := []string{"agent", "-server", "-bootstrap-expect", "3", "-node", fmt.Sprintf("s%d", i+1),
				"-bind", ips[i], "-advertise", ips[i], "-client", ips[i], "-data-dir", dir,
				"-retry-interval", "1s", "-log-level", "warn", "-disable-host-node-id"}
			for _, ip := range ips {
				a = append(a, "-retry-join", ip)
			}
			return a
		}}
}

// etcdSystem takes KV writes only, through the gRPC gateway's JSON
// /v3/kv/put (keys and values base64), the closest etcd has to an HTTP
// API; it has no service catalog.
func etcdSystem(bin string) *system {
	return &system{name: "etcd", bin: bin, port: 2379,
		args: func(i int, ips []string, dir string) []string {
			var peers []string
			for k, ip := range ips {
				peers = append(peers, fmt.Sprintf("e%d=http://%s:2380", k+1, ip))
			}
			return []string{"--name", fmt.Sprintf("e%d", i+1), "--data-dir", dir,
				"--listen-client-urls", "http://" + ips[i] + ":2379", "--advertise-client-urls", "http://" + ips[i] + ":2379",
				"--listen-peer-urls", "http://" + ips[i] + ":2380", "--initial-advertise-peer-urls", "http://" + ips[i] + ":2380",
				"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new",
				"--initial-cluster-token", "writes-bench", "--logger", "zap", "--log-level", "warn"}
		},
		ready: func(ctx context.Context, hc *http.Client, bases []string) bool {
			for _, b := range bases {
				var h struct{ Health string }
				if getJSON(ctx, hc, b+"/health", &h) != nil || h.Health != "true" {
					return false
				}
			}
			return true
		},
		write: map[string]func(ctx context.Context, base string, w, i int) (*http.Request, error){
			"kv": func(ctx context.Context, base string, w, i int) (*http.Request, error) {
				body, err := json.Marshal(map[string]string{
					"key":   base64.StdEncoding.EncodeToString([]byte(kvKey(w, i))),
					"value": base64.StdEncoding.EncodeToString(value),
				})
				if err != nil {
					return nil, err
				}
				return http.NewRequestWithContext(ctx, http.MethodPost, base+"/v3/kv/put", bytes.NewReader(body))
			},
		},
	}
}

func getJSON(ctx context.Context, hc *http.Client, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return json.Unmarshal(b, out)
}

// cluster is one system's three running servers.
type cluster struct {
	sys   *system
	work  string
	ips   []string
	bases []string // http://IP:port of each server
	procs []*exec.Cmd
	done  []chan struct{}
}

// start starts sys's three servers on ips, with fresh data directories
// under work, and waits until they are ready.
func start(ctx context.Context, sys *system, work string, ips []string, hc *http.Client, timeout time.Duration) (*cluster, error) {
	c := &cluster{sys: sys, work: work, ips: ips}
	for i, ip := range ips {
		dir := filepath.Join(work, fmt.Sprintf("%s-%d", sys.name, i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return c, err
		}
		log, err := os.Create(dir + ".log")
		if err != nil {
			return c, err
		}
		cmd := exec.Command(sys.bin, sys.args(i, ips, dir)...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			log.Close()
			return c, fmt.Errorf("start %s server %d: %w", sys.name, i+1, err)
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait() // its exit is reported by alive
			log.Close()
			close(done)
		}()
		c.procs, c.done = append(c.procs, cmd), append(c.done, done)
		c.bases = append(c.bases, "http://"+ip+":"+strconv.Itoa(sys.port))
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.alive(); err != nil {
			return c, err
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok := sys.ready(pctx, hc, c.bases)
		cancel()
		if ok {
			return c, nil
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("%s: servers not ready after %s (logs in %s)", sys.name, timeout, work)
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-tick.C:
		}
	}
}

// alive fails when a server has exited.
func (c *cluster) alive() error {
	for i, d := range c.done {
		select {
		case <-d:
			return fmt.Errorf("%s server %d exited: %s; its log is %s", c.sys.name, i+1, c.procs[i].ProcessState,
				filepath.Join(c.work, fmt.Sprintf("%s-%d.log", c.sys.name, i+1)))
		default:
		}
	}
	return nil
}

// stop sends SIGTERM to every server, kills those still running after
// 15s, and removes their data unless keep.
func (c *cluster) stop(keep bool) {
	for _, p := range c.procs {
		_ = p.Process.Signal(syscall.SIGTERM) // fails only when already gone
	}
	deadline := time.After(15 * time.Second)
	for i, d := range c.done {
		select {
		case <-d:
		case <-deadline:
			fmt.Fprintf(os.Stderr, "%s server %d did not stop within 15s of SIGTERM; killing it\n", c.sys.name, i+1)
			_ = c.procs[i].Process.Kill()
			<-d
		}
	}
	if !keep {
		for i := range c.procs {
			os.RemoveAll(filepath.Join(c.work, fmt.Sprintf("%s-%d", c.sys.name, i+1)))
			os.Remove(filepath.Join(c.work, fmt.Sprintf("%s-%d.log", c.sys.name, i+1)))
		}
	}
}

func (c *cluster) pids() []int {
	var p []int
	for _, cmd := range c.procs {
		p = append(p, cmd.Process.Pid)
	}
	return p
}
