package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/cairndns/cairn/internal/clock"
	"github.com/urfave/cli/v2"
)

// watchTypes are the values of "cairn watch -type".
var watchTypes = []string{"service", "services", "nodes", "checks", "key", "keyprefix"}

// Pacing of the watch loop. A blocking query returns when the data
// changes or after -wait; an agent without blocking support (or a proxy in
// between) answers at once, so a query that comes back quickly with
// nothing new waits before the next, longer each time.
const (
	watchFastReturn = time.Second      // an answer sooner than this, unchanged, is backed off
	watchBackoffMin = time.Second      // first wait after a fast, unchanged answer or an error
	watchBackoffMax = 30 * time.Second // longest wait
	watchMinGap     = 100 * time.Millisecond
)

func watchCommand() *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "Watch a view of the catalog and run a handler each time it changes",
		UsageText: "cairn watch -type service -service NAME [-tag TAG] [-passing] [-http-addr ADDRESS] [--] [HANDLER ARG...]\n" +
			"cairn watch -type services|nodes [-http-addr ADDRESS] [--] [HANDLER ARG...]\n" +
			"cairn watch -type checks [-service NAME] [-state STATE] [-http-addr ADDRESS] [--] [HANDLER ARG...]\n" +
			"cairn watch -type key -key KEY | -type keyprefix -prefix PREFIX [-http-addr ADDRESS] [--] [HANDLER ARG...]",
		Description: "Follows a view with blocking queries (?index=&wait=, X-Consul-Index) and,\n" +
			"each time it changes, runs HANDLER with the view's JSON on its stdin: the\n" +
			"same JSON as the HTTP API's (service: /v1/health/service/NAME; services:\n" +
			"/v1/catalog/services; nodes: /v1/catalog/nodes; checks: /v1/health/checks/NAME,\n" +
			"or /v1/health/state/STATE without -service; key: /v1/kv/KEY, null while it\n" +
			"does not exist; keyprefix: /v1/kv/PREFIX?recurse). The handler runs once at the\n" +
			"start, then only when the index moves. It runs until interrupted; a failing\n" +
			"handler is reported and the watch goes on. Without HANDLER, prints the\n" +
			"view's JSON once and exits. Flags must come before HANDLER.",
		ArgsUsage:    "[HANDLER ARG...]",
		OnUsageError: onUsageError("cairn watch"),
		Flags: agentFlags(
			&cli.StringFlag{Name: "type", Usage: "what to watch: `TYPE` service, services, nodes, checks, key or keyprefix"},
			&cli.StringFlag{Name: "key", Usage: "the `KEY` (required with -type key)"},
			&cli.StringFlag{Name: "prefix", Usage: "the key `PREFIX` (with -type keyprefix; empty: every key)"},
			&cli.StringFlag{Name: "service", Usage: "the service `NAME` (required with -type service)"},
			&cli.StringFlag{Name: "tag", Usage: "only instances with `TAG` (with -type service)"},
			&cli.BoolFlag{Name: "passing", Usage: "only instances whose checks pass (with -type service)"},
			&cli.StringFlag{Name: "state", Usage: "checks in `STATE`: any, passing, warning or critical (with -type checks)", DefaultText: "any"},
			&cli.DurationFlag{Name: "wait", Usage: "longest `DURATION` one blocking query waits", Value: 5 * time.Minute},
		),
		Action: watch,
	}
}

// watchQuery turns the flags into the path and parameters of the view.
func watchQuery(c *cli.Context) (string, url.Values, error) {
	typ := c.String("type")
	if !slices.Contains(watchTypes, typ) {
		if typ == "" {
			return "", nil, usagef(`missing -type: give one of %s (see "cairn watch -h")`, strings.Join(watchTypes, ", "))
		}
		return "", nil, usagef(`-type %q: want one of %s (see "cairn watch -h")`, typ, strings.Join(watchTypes, ", "))
	}
	only := map[string][]string{"service": {"service", "tag", "passing"}, "checks": {"service", "state"}, "key": {"key"}, "keyprefix": {"prefix"}}[typ]
	for _, f := range []string{"service", "tag", "passing", "state", "key", "prefix"} {
		if c.IsSet(f) && !slices.Contains(only, f) {
			return "", nil, usagef(`-%s does not go with -type %s (see "cairn watch -h")`, f, typ)
		}
	}
	if c.Duration("wait") <= 0 {
		return "", nil, usagef(`-wait %s: want a positive duration`, c.Duration("wait"))
	}
	q := url.Values{}
	switch typ {
	case "service":
		name := c.String("service")
		if strings.TrimSpace(name) == "" {
			return "", nil, usagef(`-type service needs -service NAME (see "cairn watch -h")`)
		}
		if c.IsSet("tag") {
			q.Set("tag", c.String("tag"))
		}
		if c.Bool("passing") {
			q.Set("passing", "true")
		}
		return "/v1/health/service/" + url.PathEscape(name), q, nil
	case "services":
		return "/v1/catalog/services", q, nil
	case "nodes":
		return "/v1/catalog/nodes", q, nil
	case "key":
		key := strings.TrimPrefix(c.String("key"), "/")
		if key == "" {
			return "", nil, usagef(`-type key needs -key KEY (see "cairn watch -h")`)
		}
		return "/v1/kv/" + key, q, nil
	case "keyprefix":
		q.Set("recurse", "true")
		return "/v1/kv/" + strings.TrimPrefix(c.String("prefix"), "/"), q, nil
	}
	if c.IsSet("service") && c.IsSet("state") {
		return "", nil, usagef("give -service or -state with -type checks, not both")
	}
	if name := c.String("service"); c.IsSet("service") {
		if strings.TrimSpace(name) == "" {
			return "", nil, usagef("-service is empty")
		}
		return "/v1/health/checks/" + url.PathEscape(name), q, nil
	}
	state := "any"
	if c.IsSet("state") {
		state = c.String("state")
	}
	if !slices.Contains([]string{"any", "passing", "warning", "critical"}, state) {
		return "", nil, usagef(`-state %q: want any, passing, warning or critical`, state)
	}
	return "/v1/health/state/" + state, q, nil
}

func watch(c *cli.Context) error {
	path, query, err := watchQuery(c)
	if err != nil {
		return err
	}
	handler := c.Args().Slice()
	if len(handler) > 0 && strings.TrimSpace(handler[0]) == "" {
		return usagef(`the handler is empty (see "cairn watch -h")`)
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	wait := c.Duration("wait")
	fetch := func(ctx context.Context, index uint64) ([]byte, uint64, error) {
		body, meta, err := client.BlockingGet(ctx, path, query, index, wait)
		if err != nil {
			return nil, 0, err
		}
		return body, meta.LastIndex, nil
	}
	if len(handler) == 0 {
		body, _, err := fetch(c.Context, 0)
		if err != nil {
			return fmt.Errorf("watch %s: %w", path, err)
		}
		return writeIndented(c.App.Writer, body)
	}
	w := &watcher{
		fetch: fetch,
		handle: func(ctx context.Context, body []byte) error {
			cmd := exec.CommandContext(ctx, handler[0], handler[1:]...)
			cmd.Stdin = bytes.NewReader(body)
			cmd.Stdout, cmd.Stderr = c.App.Writer, c.App.ErrWriter
			return cmd.Run()
		},
		warn: func(err error) { fmt.Fprintf(c.App.ErrWriter, "Warning: %s\n", errorLine(err)) },
	}
	return w.run(c.Context)
}

// writeIndented writes a JSON body indented, as -format json does.
func writeIndented(w io.Writer, body []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		return fmt.Errorf("the agent sent invalid JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// watcher is the loop of "cairn watch", apart from HTTP and processes so
// that its pacing can be tested without either.
type watcher struct {
	// fetch makes one blocking query after index (0: answer at once) and
	// returns the body and its index.
	fetch func(ctx context.Context, index uint64) ([]byte, uint64, error)
	// handle runs the handler with a changed view.
	handle func(ctx context.Context, body []byte) error
	// warn reports a failed query or handler; the loop goes on.
	warn func(error)
	// now and sleep are the clock; nil means the real one. sleep reports
	// whether d passed (false: ctx ended first).
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) bool
}

// run follows the view until ctx ends, and then returns nil. The handler
// runs on the first answer and then each time the index changes, never
// for an answer with the index it last saw. An index that moves backwards
// (another server answered, or the servers were rebuilt) counts as a
// change too, and the watch goes on from the new index; Consul's clients
// go back to 0 instead, which only costs a query. A query that
// fails, or that comes back sooner than watchFastReturn with the same
// index, is followed by a wait that doubles from watchBackoffMin up to
// watchBackoffMax, so that an agent answering at once is not asked in a
// tight loop; any change resets it. Queries are never closer together
// than watchMinGap.
func (w *watcher) run(ctx context.Context) error {
	now, sleep := w.now, w.sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = clock.Sleep
	}
	var (
		index   uint64
		seen    bool // whether the handler has run once
		backoff time.Duration
	)
	grow := func() time.Duration {
		backoff = min(max(2*backoff, watchBackoffMin), watchBackoffMax)
		return backoff
	}
	for {
		start := now()
		body, next, err := w.fetch(ctx, index)
		pause := watchMinGap
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			w.warn(fmt.Errorf("watch query failed (retrying): %w", err))
			pause = grow()
		case seen && next == index:
			if now().Sub(start) < watchFastReturn {
				pause = grow()
			}
		default:
			index, seen, backoff = next, true, 0
			if err := w.handle(ctx, body); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				w.warn(fmt.Errorf("handler failed: %w", err))
			}
		}
		if !sleep(ctx, pause) {
			return nil
		}
	}
}
