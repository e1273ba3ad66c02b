package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

// autopilotCommand is "cairn operator autopilot": autopilot's
// configuration and its view of the servers, as Consul's command.
func autopilotCommand() *cli.Command {
	return &cli.Command{
		Name:         "autopilot",
		Usage:        "Inspect and configure autopilot, the leader's care of the servers",
		UsageText:    "cairn operator autopilot <get-config|set-config|state> [options]",
		OnUsageError: onUsageError("cairn operator autopilot"),
		Action:       groupAction("cairn operator autopilot"),
		Subcommands: []*cli.Command{
			{
				Name:      "get-config",
				Usage:     "Show autopilot's configuration",
				UsageText: "cairn operator autopilot get-config [-format table|json] [-http-addr ADDRESS]",
				Description: "Shows the configuration the servers keep in Raft. With -format json,\n" +
					"prints it as GET /v1/operator/autopilot/configuration returns it.",
				OnUsageError: onUsageError("cairn operator autopilot get-config"),
				Flags:        agentFlags(formatFlag()),
				Action:       autopilotGetConfig,
			},
			{
				Name:  "set-config",
				Usage: "Change autopilot's configuration",
				UsageText: "cairn operator autopilot set-config [-cleanup-dead-servers=true|false] [-last-contact-threshold 200ms]\n" +
					"  [-max-trailing-logs 250] [-min-quorum N] [-server-stabilization-time 10s] [-http-addr ADDRESS]",
				Description: "Reads the configuration, changes the settings given (the others keep\n" +
					"their values) and writes it back, unless it changed in between: then it\n" +
					"fails, and running the command again applies the change to the new one.",
				OnUsageError: onUsageError("cairn operator autopilot set-config"),
				Flags: agentFlags(
					&cli.BoolFlag{Name: "cleanup-dead-servers", Usage: "let the leader remove servers that have been failed for a while", DefaultText: "unchanged"},
					&cli.DurationFlag{Name: "last-contact-threshold", Usage: "longest `DURATION` a healthy server goes without hearing from the leader", DefaultText: "unchanged"},
					&cli.Uint64Flag{Name: "max-trailing-logs", Usage: "most log entries (`N`) a healthy server trails the leader by", DefaultText: "unchanged"},
					&cli.UintFlag{Name: "min-quorum", Usage: "fewest voters (`N`) dead-server cleanup leaves (0: 3)", DefaultText: "unchanged"},
					&cli.DurationFlag{Name: "server-stabilization-time", Usage: "`DURATION` a new server must be healthy before it votes", DefaultText: "unchanged"},
				),
				Action: autopilotSetConfig,
			},
			{
				Name:      "state",
				Usage:     "Show the servers as autopilot sees them",
				UsageText: "cairn operator autopilot state [-format table|json] [-http-addr ADDRESS]",
				Description: "Shows the leader's view of the servers: whether each is healthy, votes,\n" +
					"and how current its log is, and how many failures the cluster tolerates.\n" +
					"With -format json, prints GET /v1/operator/autopilot/state.",
				OnUsageError: onUsageError("cairn operator autopilot state"),
				Flags:        agentFlags(formatFlag()),
				Action:       autopilotState,
			},
		},
	}
}

func autopilotGetConfig(c *cli.Context) error {
	const path = "cairn operator autopilot get-config"
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	format, err := outputFormat(c, path)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	conf, err := client.Operator().AutopilotGetConfiguration(c.Context)
	if err != nil {
		return fmt.Errorf("read the autopilot configuration: %w", err)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, conf)
	}
	return writeAutopilotConfig(c.App.Writer, conf)
}

// writeAutopilotConfig prints conf as Consul's get-config does.
func writeAutopilotConfig(w io.Writer, conf *api.AutopilotConfiguration) error {
	_, err := fmt.Fprintf(w, "CleanupDeadServers = %t\nLastContactThreshold = %s\nMaxTrailingLogs = %d\nMinQuorum = %d\nServerStabilizationTime = %s\n",
		conf.CleanupDeadServers, conf.LastContactThreshold, conf.MaxTrailingLogs, conf.MinQuorum, conf.ServerStabilizationTime)
	return err
}

func autopilotSetConfig(c *cli.Context) error {
	const path = "cairn operator autopilot set-config"
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	for _, name := range []string{"last-contact-threshold", "server-stabilization-time"} {
		if c.IsSet(name) && c.Duration(name) < 0 {
			return usagef("-%s %s: must not be negative (see \"%s -h\")", name, c.Duration(name), path)
		}
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	op := client.Operator()
	conf, err := op.AutopilotGetConfiguration(c.Context)
	if err != nil {
		return fmt.Errorf("read the autopilot configuration: %w", err)
	}
	if c.IsSet("cleanup-dead-servers") {
		conf.CleanupDeadServers = c.Bool("cleanup-dead-servers")
	}
	if c.IsSet("last-contact-threshold") {
		conf.LastContactThreshold = api.Duration(c.Duration("last-contact-threshold"))
	}
	if c.IsSet("max-trailing-logs") {
		conf.MaxTrailingLogs = c.Uint64("max-trailing-logs")
	}
	if c.IsSet("min-quorum") {
		conf.MinQuorum = c.Uint("min-quorum")
	}
	if c.IsSet("server-stabilization-time") {
		conf.ServerStabilizationTime = api.Duration(c.Duration("server-stabilization-time"))
	}
	ok, err := op.AutopilotCASConfiguration(c.Context, conf)
	switch {
	case err != nil:
		return fmt.Errorf("set the autopilot configuration: %w", err)
	case !ok:
		return fmt.Errorf("set the autopilot configuration: it changed while this command ran (index %d); run it again", conf.ModifyIndex)
	}
	_, err = fmt.Fprintln(c.App.Writer, "Configuration updated.")
	return err
}

func autopilotState(c *cli.Context) error {
	const path = "cairn operator autopilot state"
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
	}
	format, err := outputFormat(c, path)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	st, err := client.Operator().AutopilotState(c.Context)
	if err != nil {
		return fmt.Errorf("read the autopilot state: %w", err)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, st)
	}
	w := c.App.Writer
	if _, err := fmt.Fprintf(w, "Healthy: %t\nFailure Tolerance: %d\nOptimistic Failure Tolerance: %d\nLeader: %s\n\n",
		st.Healthy, st.FailureTolerance, st.OptimisticFailureTolerance, st.Leader); err != nil {
		return err
	}
	rows := [][]string{{"Node", "Address", "Status", "Healthy", "Gossip", "Last Contact", "Last Term", "Last Index", "Stable Since", "Version", "Clock Skew"}}
	var skewed []string
	ids := slices.SortedFunc(maps.Keys(st.Servers), cmp.Compare[string])
	for _, id := range ids {
		s := st.Servers[id]
		contact := s.LastContact.String()
		if s.LastContact < 0 {
			contact = "unknown"
		}
		since := ""
		if !s.StableSince.IsZero() {
			since = s.StableSince.UTC().Format(time.RFC3339)
		}
		skew, off := showSkew(s.ClockSkew) // cluster.go
		if off {
			skewed = append(skewed, s.Name+" "+skew)
		}
		rows = append(rows, []string{s.Name, s.Address, s.Status, strconv.FormatBool(s.Healthy), s.NodeStatus, contact,
			strconv.FormatUint(s.LastTerm, 10), strconv.FormatUint(s.LastIndex, 10), since, s.Version, skew})
	}
	if err := writeTable(w, rows); err != nil {
		return err
	}
	warnSkew(c, "the leader's", skewed)
	return nil
}
