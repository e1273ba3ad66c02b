package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/rpc"
	"github.com/urfave/cli/v2"
)

// memberStatuses are the values -status accepts.
var memberStatuses = []string{api.MemberAlive, api.MemberFailed, api.MemberLeft, api.MemberLeaving, api.MemberIncompatible}

func membersCommand() *cli.Command {
	return &cli.Command{
		Name:      "members",
		Usage:     "List the members of the agent's LAN (or WAN) gossip pool",
		UsageText: "cairn members [-wan] [-status alive|failed|left|leaving|incompatible] [-format table|json] [-http-addr ADDRESS]",
		Description: "Lists the agents the local agent sees in its datacenter's gossip pool,\n" +
			"itself included, sorted by name. Gossip is eventually consistent: two\n" +
			"agents may briefly disagree (\"cairn catalog nodes\" is the consistent view).\n" +
			"With -wan, lists the WAN pool instead: the servers of every datacenter,\n" +
			"named <node>.<dc> (the local agent must be a server).\n" +
			"Build is each agent's \"<version>:<revision>\" and Protocol the cairn\n" +
			"protocol it speaks: during an upgrade, they show which agents run what.\n" +
			"An agent this one refused because its protocol range does not overlap\n" +
			"this agent's is listed with status \"incompatible\" (see\n" +
			"docs/operating/upgrades.md); it is no member, and gets no traffic.\n" +
			"With -format json, prints an array of objects with Name, Addr, Port,\n" +
			"Status, Role, Datacenter and Tags.",
		OnUsageError: onUsageError("cairn members"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "wan", Usage: "list the WAN pool (servers of every datacenter) instead of the LAN pool"},
			&cli.StringFlag{Name: "status", Usage: "list only members in `STATUS`: alive, failed, left, leaving or incompatible"},
			formatFlag(),
		),
		Action: listMembers,
	}
}

func listMembers(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn members -h\")", c.Args().First())
	}
	status := c.String("status")
	if c.IsSet("status") && !slices.Contains(memberStatuses, status) {
		return usagef("-status %q: want one of %s (see \"cairn members -h\")", status, strings.Join(memberStatuses, ", "))
	}
	format, err := outputFormat(c, "cairn members")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	list, what := client.Agent().Members, "members"
	if c.Bool("wan") {
		list, what = client.Agent().MembersWAN, "WAN members"
	}
	members, err := list(c.Context)
	if err != nil {
		return fmt.Errorf("list %s: %w", what, err)
	}
	if status != "" {
		members = slices.DeleteFunc(members, func(m api.Member) bool { return m.Status != status })
	}
	slices.SortFunc(members, func(a, b api.Member) int { return strings.Compare(a.Name, b.Name) })
	if format == formatJSON {
		return writeJSON(c.App.Writer, members)
	}
	rows := [][]string{{"Node", "Address", "Status", "Role", "Build", "Protocol", "DC", "Clock Skew"}}
	var skewed []string
	for _, m := range members {
		addr := m.Addr
		if m.Port != 0 { // an agent without gossip has no port
			addr = net.JoinHostPort(m.Addr, strconv.Itoa(int(m.Port)))
		}
		skew, off := showSkew(m.ClockSkew)
		if off {
			skewed = append(skewed, m.Name+" "+skew)
		}
		rows = append(rows, []string{m.Name, addr, m.Status, m.Role, m.Tags["build"], m.Tags["vsn"], m.Datacenter, skew})
	}
	if err := writeTable(c.App.Writer, rows); err != nil {
		return err
	}
	warnSkew(c, "this agent's", skewed)
	return nil
}

// showSkew formats a measured clock skew for a table ("" when unknown)
// and says whether it is past rpc.ClockSkewWarnAt.
func showSkew(d *api.Duration) (string, bool) {
	if d == nil {
		return "", false
	}
	return d.String(), time.Duration(*d).Abs() > rpc.ClockSkewWarnAt
}

// warnSkew warns on stderr about the servers whose clocks are off from
// whose (the agent's, the leader's) by more than rpc.ClockSkewWarnAt.
func warnSkew(c *cli.Context, whose string, skewed []string) {
	if len(skewed) == 0 {
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "Warning: clocks off from %s by more than %v: %s; requests do not depend on it, "+
		"but ACL token expiry and the times shown do: check NTP\n", whose, rpc.ClockSkewWarnAt, strings.Join(skewed, ", "))
}

func joinCommand() *cli.Command {
	return &cli.Command{
		Name:      "join",
		Usage:     "Tell the local agent to join the gossip pool of other agents",
		UsageText: "cairn join [-wan] [-http-addr ADDRESS] ADDRESS...",
		Description: "Asks the local agent to join the agents at each ADDRESS: an IP or host\n" +
			"name, with \":PORT\" when their gossip port is not the local agent's\n" +
			"(8301 by default). Joining one agent of a cluster is enough: gossip\n" +
			"spreads the membership. Fails only when no address could be joined.\n" +
			"With -wan, the local agent (a server) joins the WAN pool of the servers\n" +
			"at each ADDRESS (WAN port, 8302 by default): one server of another\n" +
			"datacenter is enough to know them all.",
		ArgsUsage:    "ADDRESS...",
		OnUsageError: onUsageError("cairn join"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "wan", Usage: "join the WAN pool (servers of every datacenter) instead of the LAN pool"},
		),
		Action: joinAgents,
	}
}

func joinAgents(c *cli.Context) error {
	addrs := c.Args().Slice()
	if len(addrs) == 0 {
		return usagef(`missing ADDRESS: give the address of at least one agent to join (see "cairn join -h")`)
	}
	for i, a := range addrs {
		switch {
		case i > 0 && strings.HasPrefix(a, "-"):
			return usagef(`unknown flag %q after address %q (see "cairn join -h")`, a, addrs[0])
		case strings.TrimSpace(a) == "":
			return usagef(`address %d is empty (see "cairn join -h")`, i+1)
		}
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	join := client.Agent().Join
	if c.Bool("wan") {
		join = client.Agent().JoinWAN
	}
	joined := 0
	var failed []error
	for _, addr := range addrs {
		err := join(c.Context, addr)
		var ue *api.UnreachableError
		switch {
		case errors.As(err, &ue):
			// The local agent is not there: no other address will fare better.
			return err
		case err != nil:
			failed = append(failed, fmt.Errorf("join %s: %w", addr, err))
		default:
			joined++
		}
	}
	if joined == 0 {
		return errors.Join(append([]error{fmt.Errorf("joined 0 of %d agents", len(addrs))}, failed...)...)
	}
	for _, err := range failed {
		fmt.Fprintf(c.App.ErrWriter, "Warning: %s\n", errorLine(err))
	}
	_, err = fmt.Fprintf(c.App.Writer, "Joined %d of %d agents\n", joined, len(addrs))
	return err
}

func leaveCommand() *cli.Command {
	return &cli.Command{
		Name:      "leave",
		Usage:     "Make the local agent leave the cluster gracefully and shut down",
		UsageText: "cairn leave [-http-addr ADDRESS]",
		Description: "Tells the other agents that the local agent is leaving (so it is marked\n" +
			"left, not failed), then stops it.",
		OnUsageError: onUsageError("cairn leave"),
		Flags:        agentFlags(),
		Action:       leaveCluster,
	}
}

func forceLeaveCommand() *cli.Command {
	return &cli.Command{
		Name:      "force-leave",
		Usage:     "Make a failed member leave the gossip pool",
		UsageText: "cairn force-leave [-prune] [-wan] [-http-addr ADDRESS] NODE",
		Description: "Marks the failed member NODE as left in every agent's view, so none tries\n" +
			"to reconnect to it and the leader removes its node from the catalog\n" +
			"(a server leaves the Raft configuration). An alive member is left alone:\n" +
			"it is not failed. With -prune the member is forgotten at once rather than\n" +
			"listed as left for a while; with -wan NODE is a WAN member (<node>.<dc>).\n" +
			"Needs operator:write.",
		OnUsageError: onUsageError("cairn force-leave"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "prune", Usage: "forget the member at once"},
			&cli.BoolFlag{Name: "wan", Usage: "act on the WAN pool (the local agent must be a server)"},
		),
		Action: forceLeave,
	}
}

func forceLeave(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("want one NODE, got %d arguments (see \"cairn force-leave -h\")", c.NArg())
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	node := c.Args().First()
	if err := client.Agent().ForceLeave(c.Context, node, api.ForceLeaveOptions{Prune: c.Bool("prune"), WAN: c.Bool("wan")}); err != nil {
		return fmt.Errorf("force-leave %s: %w", node, err)
	}
	return nil
}

func leaveCluster(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn leave -h\")", c.Args().First())
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.Agent().Leave(c.Context); err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, "Graceful leave complete")
	return err
}
