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
		UsageText:    "cairn operator raft <list-peers|remove-peer|transfer-leader> [options]",
		OnUsageError: onUsageError("cairn operator"),
		Action:       groupAction("cairn operator"),
		Subcommands: []*cli.Command{
			{
				Name:         "raft",
				Usage:        "Inspect the Raft configuration of the datacenter's servers",
				UsageText:    "cairn operator raft <list-peers|remove-peer|transfer-leader> [options]",
				OnUsageError: onUsageError("cairn operator raft"),
				Action:       groupAction("cairn operator raft"),
				Subcommands:  []*cli.Command{listPeersCommand(), removePeerCommand(), transferLeaderCommand()},
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

func removePeerCommand() *cli.Command {
	const path = "cairn operator raft remove-peer"
	return &cli.Command{
		Name:      "remove-peer",
		Usage:     "Remove a server from the Raft configuration",
		UsageText: path + " -id ID | -address IP:PORT [-http-addr ADDRESS]",
		Description: "Removes a server that is gone for good from the Raft configuration at once,\n" +
			"instead of waiting for autopilot's dead-server cleanup. Name it by its Raft ID\n" +
			"(the ID column of list-peers) or its address. A server still alive in gossip\n" +
			"is added back by the leader: stop it, or make it leave, first.",
		OnUsageError: onUsageError(path),
		Flags: agentFlags(
			&cli.StringFlag{Name: "id", Usage: "the server's Raft `ID`"},
			&cli.StringFlag{Name: "address", Usage: "the server's `IP:PORT` (its server port)"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
			}
			id, addr := c.String("id"), c.String("address")
			if (id == "") == (addr == "") {
				return usagef("give one of -id and -address (see \"%s -h\")", path)
			}
			client, err := newClient(c)
			if err != nil {
				return err
			}
			op := client.Operator()
			if id != "" {
				err = op.RaftRemovePeerByID(c.Context, id)
			} else {
				err = op.RaftRemovePeerByAddress(c.Context, addr)
			}
			if err != nil {
				return fmt.Errorf("remove the raft peer: %w", err)
			}
			_, err = fmt.Fprintf(c.App.Writer, "Removed peer with %s %s\n", map[bool]string{true: "id", false: "address"}[id != ""], id+addr)
			return err
		},
	}
}

func transferLeaderCommand() *cli.Command {
	const path = "cairn operator raft transfer-leader"
	return &cli.Command{
		Name:      "transfer-leader",
		Usage:     "Hand Raft leadership to another server",
		UsageText: path + " [-id ID] [-http-addr ADDRESS]",
		Description: "Makes the leader hand leadership to the voter of Raft ID -id (the ID column\n" +
			"of list-peers), or without it to the voter Raft finds most current.",
		OnUsageError: onUsageError(path),
		Flags:        agentFlags(&cli.StringFlag{Name: "id", Usage: "the Raft `ID` of the voter to lead"}),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unexpected argument %q (see \"%s -h\")", c.Args().First(), path)
			}
			client, err := newClient(c)
			if err != nil {
				return err
			}
			ok, err := client.Operator().RaftTransferLeader(c.Context, c.String("id"))
			if err != nil {
				return fmt.Errorf("transfer raft leadership: %w", err)
			}
			if !ok {
				return fmt.Errorf("transfer raft leadership: the leader reported no success")
			}
			_, err = fmt.Fprintln(c.App.Writer, "Success")
			return err
		},
	}
}
