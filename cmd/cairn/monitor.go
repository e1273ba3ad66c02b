package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

func monitorCommand() *cli.Command {
	return &cli.Command{
		Name:      "monitor",
		Usage:     "Stream the local agent's log",
		UsageText: "cairn monitor [-log-level debug] [-log-json]",
		Description: "Prints the agent's log lines as they are written, at -log-level or above\n" +
			"(the agent's own output keeps its level), until interrupted (SIGINT or\n" +
			"SIGTERM). A reader that falls behind is told how many lines it missed.\n" +
			"Needs agent:read with ACLs.",
		OnUsageError: onUsageError("cairn monitor"),
		Flags: agentFlags(
			&cli.StringFlag{Name: "log-level", Usage: "lowest `LEVEL` shown: trace, debug, info, warn or error", Value: "info"},
			&cli.BoolFlag{Name: "log-json", Usage: "print each line as a JSON object"},
		),
		Action: runMonitor,
	}
}

// monitorLevels are the levels -log-level takes, as the agent's
// ?loglevel (trace is debug, cairn's lowest).
var monitorLevels = []string{"trace", "debug", "info", "warn", "error"}

// checkLogLevel refuses a level the agent would refuse, naming the flag.
func checkLogLevel(flag, level string) error {
	for _, l := range monitorLevels {
		if strings.EqualFold(level, l) {
			return nil
		}
	}
	return usagef("-%s: %q is not one of %s", flag, level, strings.Join(monitorLevels, ", "))
}

func runMonitor(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn monitor -h\")", c.Args().First())
	}
	level := c.String("log-level")
	if err := checkLogLevel("log-level", level); err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	// SIGINT and SIGTERM end the stream, and the command succeeds.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	monitor := client.Agent().Monitor
	if c.Bool("log-json") {
		monitor = client.Agent().MonitorJSON
	}
	lines, err := monitor(ctx, level)
	if err != nil {
		return fmt.Errorf("monitor: %w", err)
	}
	return printLines(ctx, stop, c.App.Writer, lines)
}

// printLines prints lines until the channel closes. The end of ctx is the
// operator's stop, not an error; the agent ending the stream is one. A
// failed write stops the stream (cancel) and waits for its reader to end.
func printLines(ctx context.Context, cancel context.CancelFunc, w io.Writer, lines <-chan string) error {
	for l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			cancel()
			for range lines {
			}
			return fmt.Errorf("monitor: write: %w", err)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("monitor: the agent ended the stream (it is shutting down, or restarted)")
}
