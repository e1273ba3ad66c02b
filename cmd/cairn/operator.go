package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func operatorCommand() *cli.Command {
	return &cli.Command{
		Name:         "operator",
		Usage:        "Inspect the servers of the datacenter",
		UsageText:    "cairn operator raft <list-peers> [options]",
		OnUsageError: onUsageError("cairn operator"),
		Action:       groupAction("cairn operator"),
		Subcommands: []*cli.Command{
			{
				Name:         "raft",
				Usage:        "Inspect the Raft configuration of the datacenter's servers",
				UsageText:    "cairn operator raft list-peers [options]",
				OnUsageError: onUsageError("cairn operator raft"),
				Action:       groupAction("cairn operator raft"),
				Subcommands:  []*cli.Command{listPeersCommand()},
			},
			autopilotCommand(), // autopilot.go
		},
	}
}

func listPeersCommand() *cli.Command {
	return &cli.Command{
		Name:      "list-peers",
		Usage:     "List the servers in the Raft configuration",
		UsageText: "cairn operator raft list-peers [-format table|json] [-http-addr ADDRESS]",
		Description: "Lists the servers of the datacenter as Raft knows them, sorted by node:\n" +
			"which one leads and which ones vote. With -format json, prints the\n" +
			"configuration as GET /v1/operator/raft/configuration returns it.",
		OnUsageError: onUsageError("cairn operator raft list-peers"),
		Flags:        agentFlags(formatFlag()),
		Action:       listPeers,
	}
}

func listPeers(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn operator raft list-peers -h\")", c.Args().First())
	}
	format, err := outputFormat(c, "cairn operator raft list-peers")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	cfg, err := client.Operator().RaftConfiguration(c.Context)
	if err != nil {
		return fmt.Errorf("read the raft configuration: %w", err)
	}
	cfg.Servers = slices.DeleteFunc(cfg.Servers, func(s *api.RaftServer) bool { return s == nil })
	slices.SortFunc(cfg.Servers, func(a, b *api.RaftServer) int { return strings.Compare(a.Node, b.Node) })
	if format == formatJSON {
		return writeJSON(c.App.Writer, cfg)
	}
	rows := [][]string{{"Node", "ID", "Address", "State", "Voter"}}
	for _, s := range cfg.Servers {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		rows = append(rows, []string{s.Node, s.ID, s.Address, state, strconv.FormatBool(s.Voter)})
	}
	return writeTable(c.App.Writer, rows)
}
