// Command consulshim stands in for the consul binary that Consul's
// sdk/testutil runs, so that Consul's own api test suite starts cairn
// agents: it answers "consul version", and for "consul agent -config-file
// F" it translates testutil's JSON config into a cairn config file and runs
// "cairn agent" (the binary named by $CAIRN_BIN, else cairn beside the shim
// or on $PATH) with it.
//
// Where testutil waits for something cairn has not, a small HTTP front on
// testutil's HTTP port stands between: it holds requests until cairn's API
// listens, answers the wait for Connect's CA once, and maps configured
// tokens that are not UUIDs (Consul's tests use "root") to UUIDs. It passes
// everything else through unchanged. compat/consulsuite runs the suite.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// consulVersion is the Consul release the shim claims to be: the one
// github.com/hashicorp/consul/api v1.34 ships with.
const consulVersion = "1.22.7"

func main() {
	// cairn is started with Pdeathsig, which fires when the thread that
	// started it ends: keep main on one thread for the shim's life.
	runtime.LockOSThread()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "consulshim")
	os.Exit(run(os.Args[1:], logger))
}

func run(args []string, logger *slog.Logger) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: consul version [-format=json] | consul agent -config-file FILE ...")
		return 1
	}
	switch args[0] {
	case "version":
		printVersion(args[1:])
		return 0
	case "agent":
		code, err := runAgent(args[1:], logger)
		if err != nil {
			logger.Error("agent", "err", err)
		}
		return code
	}
	fmt.Fprintf(os.Stderr, "consul shim: %q: only \"version\" and \"agent\" are stood in for\n", args[0])
	return 1
}

// printVersion answers as "consul version" does; testutil reads the
// Version field of -format=json.
func printVersion(args []string) {
	for _, a := range args {
		if strings.TrimLeft(a, "-") == "format=json" {
			b, _ := json.Marshal(map[string]string{"Version": consulVersion, "Revision": "cairn-consulshim", "Prerelease": ""})
			fmt.Println(string(b))
			return
		}
	}
	fmt.Printf("Consul v%s\nRevision cairn-consulshim\n", consulVersion)
}

// agentArgs are the config files of "consul agent"; the other arguments
// are reported and ignored.
func agentArgs(args []string, logger *slog.Logger) ([]string, error) {
	var files []string
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		if v, ok := strings.CutPrefix(a, "config-file="); ok {
			files = append(files, v)
			continue
		}
		if a == "config-file" && i+1 < len(args) {
			files = append(files, args[i+1])
			i++
			continue
		}
		logger.Warn("argument ignored", "arg", args[i])
	}
	if len(files) == 0 {
		return nil, errors.New("no -config-file: the shim translates testutil's config file")
	}
	return files, nil
}

func runAgent(args []string, logger *slog.Logger) (int, error) {
	files, err := agentArgs(args, logger)
	if err != nil {
		return 1, err
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		return 1, fmt.Errorf("read testutil config: %w", err)
	}
	bin, err := cairnBinary()
	if err != nil {
		return 1, err
	}
	httpPort, err := freePort()
	if err != nil {
		return 1, err
	}
	p, err := translate(raw, httpPort)
	if err != nil {
		return 1, err
	}
	for _, n := range p.notes {
		logger.Info(n)
	}
	cfgPath := filepath.Join(filepath.Dir(files[0]), "cairn.json")
	b, err := json.MarshalIndent(p.cairn, "", "  ")
	if err != nil {
		return 1, fmt.Errorf("encode cairn config: %w", err)
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return 1, fmt.Errorf("write cairn config: %w", err)
	}

	exited := make(chan struct{})
	var srv *http.Server
	if p.frontAddr != "" {
		network, target := "tcp", fmt.Sprintf("127.0.0.1:%d", httpPort)
		if p.frontUnix {
			network, target = "unix", p.cairnUnix
		}
		ln, err := net.Listen(network, p.frontAddr)
		if err != nil {
			return 1, fmt.Errorf("front: %w", err)
		}
		srv = &http.Server{Handler: newFront(network, target, p, exited, logger)}
		go func() { _ = srv.Serve(ln) }()
	}

	// testutil's file becomes cairn's; the test's own config files (in
	// Consul's format, which cairn reads) follow it, as Consul merges them.
	cargs := []string{"agent", "-config-file", cfgPath}
	for _, f := range files[1:] {
		cargs = append(cargs, "-config-file", f)
	}
	cmd := exec.Command(bin, cargs...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// cairn must not outlive the shim, whatever ends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("start %s: %w", bin, err)
	}
	logger.Info("cairn started", "pid", cmd.Process.Pid, "config", cfgPath, "http", p.frontAddr, "cairn_http", httpPort)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait(); close(exited) }()
	parentGone := watchParent(exited)

	var werr error
loop:
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case <-parentGone:
			// testutil's process died without stopping its server.
			logger.Warn("parent exited; stopping cairn")
			_ = cmd.Process.Signal(syscall.SIGTERM)
			time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
			parentGone = nil
		case werr = <-waited:
			break loop
		}
	}
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = srv.Shutdown(ctx)
		cancel()
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return ee.ExitCode(), nil
	}
	if werr != nil {
		return 1, werr
	}
	return 0, nil
}

// cairnBinary finds the cairn binary: $CAIRN_BIN, cairn beside the shim,
// or cairn on $PATH.
func cairnBinary() (string, error) {
	if b := os.Getenv("CAIRN_BIN"); b != "" {
		return b, nil
	}
	if self, err := os.Executable(); err == nil {
		b := filepath.Join(filepath.Dir(self), "cairn")
		if _, err := os.Stat(b); err == nil {
			return b, nil
		}
	}
	b, err := exec.LookPath("cairn")
	if err != nil {
		return "", fmt.Errorf("no cairn binary: set CAIRN_BIN: %w", err)
	}
	return b, nil
}

// freePort returns a loopback TCP port that was free a moment ago, for
// cairn's own HTTP API behind the front.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// watchParent returns a channel closed when the shim's parent process has
// gone (the shim is then re-parented), checked twice a second until done
// is closed.
func watchParent(done <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	ppid := os.Getppid()
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if os.Getppid() != ppid {
					close(gone)
					return
				}
			}
		}
	}()
	return gone
}
