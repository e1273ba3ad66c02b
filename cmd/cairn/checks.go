package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

// checkKindFlags are the flags of "cairn services register" that each say
// what the service's check probes; at most one may be given.
var checkKindFlags = []string{"check-http", "check-tcp", "check-udp", "check-grpc", "check-ttl", "check-args"}

// checkOptionFlags tune the check the kind flag describes.
var checkOptionFlags = []string{"check-interval", "check-timeout", "check-status", "check-deregister-after"}

// checkFlags are the flags describing the one check of a registration by
// flags.
func checkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "check-http", Usage: "check the service by fetching `URL` (2xx passing, 429 warning)"},
		&cli.StringFlag{Name: "check-tcp", Usage: "check the service by connecting to `HOST:PORT`"},
		&cli.StringFlag{Name: "check-udp", Usage: "check the service by sending a datagram to `HOST:PORT`"},
		&cli.StringFlag{Name: "check-grpc", Usage: "check the service with grpc.health.v1 at `HOST:PORT[/SERVICE]`"},
		&cli.StringFlag{Name: "check-ttl", Usage: "the service reports its health itself (cairn checks pass) at least every `DURATION`"},
		&cli.StringSliceFlag{Name: "check-args", Usage: "check the service by running a command: one `ARG` of its argv per flag, program first (needs an agent with -enable-script-checks)"},
		&cli.StringFlag{Name: "check-interval", Usage: "run the check every `DURATION` (required for http, tcp, udp, grpc and args)"},
		&cli.StringFlag{Name: "check-timeout", Usage: "give one run of the check `DURATION`", DefaultText: "10s, at most the interval"},
		&cli.StringFlag{Name: "check-status", Usage: "`STATUS` the check starts in: passing, warning or critical", DefaultText: "critical"},
		&cli.StringFlag{Name: "check-deregister-after", Usage: "deregister the service once its check has been critical for `DURATION`", DefaultText: "never"},
	}
}

// checkFlagsSet returns the names of the check flags given.
func checkFlagsSet(c *cli.Context) []string {
	var set []string
	for _, name := range slices.Concat(checkKindFlags, checkOptionFlags) {
		if c.IsSet(name) {
			set = append(set, name)
		}
	}
	return set
}

// checkFromFlags returns the check the flags describe, nil when none is
// given. Durations and the status are checked here, so that a typo fails
// before the agent is asked.
func checkFromFlags(c *cli.Context) (*api.AgentServiceCheck, error) {
	var kinds []string
	for _, name := range checkKindFlags {
		if c.IsSet(name) {
			kinds = append(kinds, "-"+name)
		}
	}
	switch {
	case len(kinds) > 1:
		return nil, usagef("give one check, not %s: a registration by flags has one check "+
			"(use a service definition FILE with \"checks\" for several)", strings.Join(kinds, " and "))
	case len(kinds) == 0:
		for _, name := range checkOptionFlags {
			if c.IsSet(name) {
				return nil, usagef("-%s needs a check: give one of -%s", name, strings.Join(checkKindFlags, ", -"))
			}
		}
		return nil, nil
	}
	chk := &api.AgentServiceCheck{
		HTTP: c.String("check-http"), TCP: c.String("check-tcp"), UDP: c.String("check-udp"),
		GRPC: c.String("check-grpc"), Args: c.StringSlice("check-args"),
	}
	durations := []struct {
		flag string
		dst  *string
	}{
		{"check-ttl", &chk.TTL},
		{"check-interval", &chk.Interval},
		{"check-timeout", &chk.Timeout},
		{"check-deregister-after", &chk.DeregisterCriticalServiceAfter},
	}
	for _, d := range durations {
		if !c.IsSet(d.flag) {
			continue
		}
		v := c.String(d.flag)
		if dur, err := time.ParseDuration(v); err != nil || dur <= 0 {
			return nil, usagef("-%s %q: want a positive duration such as 10s or 1m30s", d.flag, v)
		}
		*d.dst = v
	}
	for _, flag := range []string{"check-http", "check-tcp", "check-udp", "check-grpc"} {
		if c.IsSet(flag) && strings.TrimSpace(c.String(flag)) == "" {
			return nil, usagef("-%s is empty", flag)
		}
	}
	if c.IsSet("check-args") && (len(chk.Args) == 0 || chk.Args[0] == "") {
		return nil, usagef("-check-args: the first value must be the program to run")
	}
	if c.IsSet("check-status") {
		switch st := c.String("check-status"); st {
		case api.HealthPassing, api.HealthWarning, api.HealthCritical:
			chk.Status = st
		default:
			return nil, usagef("-check-status %q: want passing, warning or critical", st)
		}
	}
	return chk, nil
}

func checksCommand() *cli.Command {
	ttl := func(verb, status string) *cli.Command {
		path := "cairn checks " + verb
		return &cli.Command{
			Name:      verb,
			Usage:     "Report a TTL check " + status,
			UsageText: path + " [-note TEXT] [-http-addr ADDRESS] CHECK-ID",
			Description: "Sets the status of the TTL check CHECK-ID (a service's own check is\n" +
				"\"service:<service-id>\") to " + status + " until its TTL runs out; -note\n" +
				"becomes its output.",
			ArgsUsage:    "CHECK-ID",
			OnUsageError: onUsageError(path),
			Flags: agentFlags(
				&cli.StringFlag{Name: "note", Usage: "`TEXT` kept as the check's output"},
			),
			Action: func(c *cli.Context) error { return reportTTL(c, path, verb, status) },
		}
	}
	return &cli.Command{
		Name:         "checks",
		Usage:        "List the local agent's health checks and report TTL checks",
		UsageText:    "cairn checks <list|pass|warn|fail> [options]",
		OnUsageError: onUsageError("cairn checks"),
		Action:       groupAction("cairn checks"),
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "List the checks of the local agent with their status",
				UsageText: "cairn checks list [-format table|json] [-http-addr ADDRESS]",
				Description: "Lists the checks the local agent runs, sorted by ID, with their current\n" +
					"status and the start of their output. With -format json, prints an array\n" +
					"of objects with Node, CheckID, Name, Status, Notes, Output (whole),\n" +
					"ServiceID, ServiceName, ServiceTags and Type.",
				OnUsageError: onUsageError("cairn checks list"),
				Flags:        agentFlags(formatFlag()),
				Action:       listChecks,
			},
			ttl("pass", api.HealthPassing),
			ttl("warn", api.HealthWarning),
			ttl("fail", api.HealthCritical),
		},
	}
}

// outputWidth is how much of a check's output "cairn checks list" shows.
const outputWidth = 60

func listChecks(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn checks list -h\")", c.Args().First())
	}
	format, err := outputFormat(c, "cairn checks list")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	byID, err := client.Agent().Checks(c.Context)
	if err != nil {
		return fmt.Errorf("list checks: %w", err)
	}
	list := make([]*api.AgentCheck, 0, len(byID))
	for _, chk := range byID {
		if chk != nil {
			list = append(list, chk)
		}
	}
	slices.SortFunc(list, func(a, b *api.AgentCheck) int { return strings.Compare(a.CheckID, b.CheckID) })
	if format == formatJSON {
		return writeJSON(c.App.Writer, list)
	}
	rows := [][]string{{"CheckID", "Name", "ServiceID", "Type", "Status", "Output"}}
	for _, chk := range list {
		rows = append(rows, []string{chk.CheckID, chk.Name, chk.ServiceID, chk.Type, chk.Status, truncate(chk.Output, outputWidth)})
	}
	return writeTable(c.App.Writer, rows)
}

// truncate folds s onto one line and cuts it to at most n runes, ending
// with "…" when cut.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// oneArg returns the single argument of the command at path, named what.
func oneArg(c *cli.Context, path, what string) (string, error) {
	switch {
	case c.NArg() == 0:
		return "", usagef("missing %s (see \"%s -h\")", what, path)
	case c.NArg() > 1 && strings.HasPrefix(c.Args().Get(1), "-"):
		return "", usagef("unknown flag %q after %s %q (see \"%s -h\")", c.Args().Get(1), what, c.Args().First(), path)
	case c.NArg() > 1:
		return "", usagef("want one %s, got %d arguments (see \"%s -h\")", what, c.NArg(), path)
	case strings.TrimSpace(c.Args().First()) == "":
		return "", usagef("%s is empty (see \"%s -h\")", what, path)
	}
	return c.Args().First(), nil
}

func reportTTL(c *cli.Context, path, verb, status string) error {
	id, err := oneArg(c, path, "CHECK-ID")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	agent := client.Agent()
	report := map[string]func() error{
		"pass": func() error { return agent.PassTTL(c.Context, id, c.String("note")) },
		"warn": func() error { return agent.WarnTTL(c.Context, id, c.String("note")) },
		"fail": func() error { return agent.FailTTL(c.Context, id, c.String("note")) },
	}[verb]
	if err := report(); err != nil {
		return fmt.Errorf("%s check %q: %w", verb, id, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Check %s: %s\n", id, status)
	return err
}
