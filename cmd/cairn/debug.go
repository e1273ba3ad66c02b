package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

// debugCaptures are what `cairn debug` can capture, in the order of
// -capture's default.
var debugCaptures = []string{"metrics", "members", "config", "logs", "pprof"}

// maxCPUProfile caps the CPU profile, as Consul's debug does.
const maxCPUProfile = 30 * time.Second

func debugCommand() *cli.Command {
	return &cli.Command{
		Name:      "debug",
		Usage:     "Capture the local agent's state for a bug report",
		UsageText: "cairn debug [-duration 30s] [-interval 10s] [-output DIR] [-capture metrics,members,config,logs,pprof]",
		Description: "Writes cairn-debug-<time>.tar.gz in -output, holding: the agent's\n" +
			"configuration as /v1/agent/self reports it, with secrets redacted (config);\n" +
			"its LAN members, and WAN members on a server (members); its metrics in the\n" +
			"Prometheus text format every -interval (metrics); its log at debug for\n" +
			"-duration (logs); goroutine, heap and CPU profiles (pprof: needs the agent's\n" +
			"enable_debug, and operator:read with ACLs). index.json lists what was taken\n" +
			"and what could not be. SIGINT ends the capture early; the archive is still\n" +
			"written. Read the archive before sharing it: the logs name your services.",
		OnUsageError: onUsageError("cairn debug"),
		Flags: agentFlags(
			&cli.DurationFlag{Name: "duration", Usage: "capture logs and metrics for `DURATION`", Value: 30 * time.Second},
			&cli.DurationFlag{Name: "interval", Usage: "take metrics every `DURATION`", Value: 10 * time.Second},
			&cli.StringFlag{Name: "output", Usage: "`DIR` to write the archive in", Value: "."},
			&cli.StringFlag{Name: "capture", Usage: "`LIST` of what to capture, comma-separated", Value: strings.Join(debugCaptures, ",")},
		),
		Action: runDebug,
	}
}

// debugOptions are debug's checked flags.
type debugOptions struct {
	duration, interval time.Duration
	output             string
	capture            map[string]bool
}

func debugFlags(c *cli.Context) (debugOptions, error) {
	o := debugOptions{duration: c.Duration("duration"), interval: c.Duration("interval"), output: c.String("output"), capture: map[string]bool{}}
	if c.NArg() > 0 {
		return o, usagef("unexpected argument %q (see \"cairn debug -h\")", c.Args().First())
	}
	if o.interval < time.Second {
		return o, usagef("-interval: must be at least 1s, got %s", o.interval)
	}
	if o.duration < o.interval {
		return o, usagef("-duration: must be at least -interval (%s), got %s", o.interval, o.duration)
	}
	for name := range strings.SplitSeq(c.String("capture"), ",") {
		name = strings.TrimSpace(name)
		known := false
		for _, k := range debugCaptures {
			known = known || k == name
		}
		if !known {
			return o, usagef("-capture: %q is not one of %s", name, strings.Join(debugCaptures, ", "))
		}
		o.capture[name] = true
	}
	if st, err := os.Stat(o.output); err != nil || !st.IsDir() {
		return o, usagef("-output: %q is not a directory", o.output)
	}
	return o, nil
}

func runDebug(c *cli.Context) error {
	opts, err := debugFlags(c)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	// SIGINT and SIGTERM cut the capture short; the archive is written.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := &debugBundle{dbg: client.Debug(), client: client, opts: opts, token: c.String("token"), progress: c.App.ErrWriter, started: time.Now().UTC()}
	if err := b.capture(ctx); err != nil {
		return fmt.Errorf("debug: %w", err)
	}
	path, err := b.write(opts.output)
	if err != nil {
		return fmt.Errorf("debug: %w", err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Saved debug archive: %s\n", path)
	return err
}

// debugBundle collects the archive's files in memory while the captures
// run (several at once), then writes them.
type debugBundle struct {
	dbg      *api.Debug
	client   *api.Client
	opts     debugOptions
	token    string // the CLI's own token, scrubbed from every file
	progress io.Writer
	started  time.Time

	mu    sync.Mutex
	files []debugFile
	index debugIndex
}

type debugFile struct {
	name string
	data []byte
}

// debugIndex is index.json: what the archive holds and what it lacks.
type debugIndex struct {
	Version    int // of this layout
	Node       string
	Datacenter string
	Server     bool
	AgentVer   string `json:"AgentVersion"`
	Started    time.Time
	Duration   string
	Interval   string
	Captures   []string
	Files      []string
	Notes      []string // captures skipped or failed, and why
}

// add stores a file, with the CLI's token scrubbed from it.
func (b *debugBundle) add(name string, data []byte) {
	if b.token != "" {
		data = []byte(strings.ReplaceAll(string(data), b.token, redacted))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files = append(b.files, debugFile{name, data})
}

// note records, in the index and as a progress line, a capture that was
// skipped or failed.
func (b *debugBundle) note(what string, err error) {
	b.mu.Lock()
	b.index.Notes = append(b.index.Notes, what+": "+err.Error())
	b.mu.Unlock()
	b.say("%s: not captured: %v", what, err)
}

// say prints one progress line on stderr.
func (b *debugBundle) say(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.progress, "==> "+format+"\n", args...)
}

// get reads one answer of the agent whole.
func (b *debugBundle) get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	body, err := b.dbg.Get(ctx, path, query)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// capture takes everything opts asks for: the agent's self first (which
// also says whether it is a server), then the timed captures together.
func (b *debugBundle) capture(ctx context.Context) error {
	self, err := b.get(ctx, "/v1/agent/self", nil)
	if err != nil {
		return fmt.Errorf("read the agent's configuration: %w", err)
	}
	var info api.AgentSelf
	if err := json.Unmarshal(self, &info); err != nil {
		return fmt.Errorf("decode /v1/agent/self: %w", err)
	}
	b.index = debugIndex{
		Version: 1, Node: info.Config.NodeName, Datacenter: info.Config.Datacenter, Server: info.Config.Server,
		AgentVer: info.Config.Version, Started: b.started, Duration: b.opts.duration.String(), Interval: b.opts.interval.String(),
		Captures: []string{}, Files: []string{}, Notes: []string{},
	}
	for _, name := range debugCaptures {
		if b.opts.capture[name] {
			b.index.Captures = append(b.index.Captures, name)
		}
	}
	if b.opts.capture["config"] {
		b.captureConfig(self)
	}
	if b.opts.capture["members"] {
		b.captureMembers(ctx, info.Config.Server)
	}
	timed, cancel := context.WithTimeout(ctx, b.opts.duration)
	defer cancel()
	var wg sync.WaitGroup
	if b.opts.capture["logs"] {
		wg.Go(func() { b.captureLogs(timed) })
	}
	if b.opts.capture["metrics"] {
		wg.Go(func() { b.captureMetrics(timed) })
	}
	if b.opts.capture["pprof"] {
		wg.Go(func() { b.capturePprof(ctx) })
	}
	wg.Wait()
	return nil
}

func (b *debugBundle) captureConfig(self []byte) {
	out, err := redactJSON(self)
	if err != nil {
		b.note("config", err)
		return
	}
	b.add("agent.json", out)
	b.say("config: agent.json (secrets redacted)")
}

func (b *debugBundle) captureMembers(ctx context.Context, server bool) {
	lan, err := b.get(ctx, "/v1/agent/members", nil)
	if err != nil {
		b.note("members", err)
		return
	}
	b.add("members.json", lan)
	files := "members.json"
	if server {
		wan, err := b.get(ctx, "/v1/agent/members", url.Values{"wan": {"1"}})
		if err != nil {
			b.note("members (WAN)", err)
		} else {
			b.add("members_wan.json", wan)
			files += ", members_wan.json"
		}
	}
	b.say("members: %s", files)
}

// captureLogs records the agent's log at debug until ctx ends.
func (b *debugBundle) captureLogs(ctx context.Context) {
	lines, err := b.client.Agent().Monitor(ctx, "debug")
	if err != nil {
		b.note("logs", err)
		return
	}
	var sb strings.Builder
	n := 0
	for l := range lines {
		sb.WriteString(l)
		sb.WriteByte('\n')
		n++
	}
	b.add("logs.txt", []byte(sb.String()))
	b.say("logs: logs.txt, %d lines at debug over %s", n, time.Since(b.started).Round(time.Second))
}

// captureMetrics takes the metrics at once and then every interval until
// ctx ends.
func (b *debugBundle) captureMetrics(ctx context.Context) {
	tick := time.NewTicker(b.opts.interval)
	defer tick.Stop()
	n := 0
	for {
		data, err := b.get(ctx, "/v1/agent/metrics", url.Values{"format": {"prometheus"}})
		switch {
		case err == nil:
			b.add(fmt.Sprintf("metrics/%03d.prom", n), data)
			n++
		case ctx.Err() == nil:
			b.note("metrics", err)
			return
		}
		select {
		case <-ctx.Done():
			b.say("metrics: %d samples in metrics/, every %s", n, b.opts.interval)
			return
		case <-tick.C:
		}
	}
}

// capturePprof takes the goroutine and heap profiles and a CPU profile of
// min(duration, 30s), if the agent serves them (enable_debug).
func (b *debugBundle) capturePprof(ctx context.Context) {
	seconds := int((min(b.opts.duration, maxCPUProfile) + time.Second - 1) / time.Second)
	profiles := []struct {
		file, path string
		query      url.Values
	}{
		{"goroutine.prof", "/debug/pprof/goroutine", nil},
		{"heap.prof", "/debug/pprof/heap", nil},
		{"profile.prof", "/debug/pprof/profile", url.Values{"seconds": {fmt.Sprint(seconds)}}},
	}
	var got []string
	for _, p := range profiles {
		data, err := b.get(ctx, p.path, p.query)
		if err != nil {
			b.note("pprof", pprofError(err))
			return
		}
		b.add(p.file, data)
		got = append(got, p.file)
	}
	b.say("pprof: %s (CPU for %ds)", strings.Join(got, ", "), seconds)
}

// pprofError explains why the profiles could not be read.
func pprofError(err error) error {
	var se *api.StatusError
	if errors.As(err, &se) {
		switch se.Code {
		case http.StatusNotFound:
			return errors.New("the agent runs without enable_debug (start it with -enable-debug, or enable_debug = true)")
		case http.StatusForbidden:
			return fmt.Errorf("the token lacks operator:read: %w", err)
		}
	}
	return err
}
