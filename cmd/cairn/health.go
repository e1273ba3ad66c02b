package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func maintCommand() *cli.Command {
	return &cli.Command{
		Name:      "maint",
		Usage:     "Put the local agent's node or one of its services in maintenance mode, or take it out",
		UsageText: "cairn maint -enable|-disable [-service ID] [-reason TEXT] [-http-addr ADDRESS]",
		Description: "Maintenance takes the node's services (or, with -service, one service)\n" +
			"out of DNS answers and of passing health results without deregistering\n" +
			"them; -disable brings them back. Node and service maintenance are\n" +
			"independent. The reason is shown as the maintenance check's notes.",
		OnUsageError: onUsageError("cairn maint"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "enable", Usage: "enter maintenance mode"},
			&cli.BoolFlag{Name: "disable", Usage: "leave maintenance mode"},
			&cli.StringFlag{Name: "service", Usage: "the service `ID` to act on instead of the whole node"},
			&cli.StringFlag{Name: "reason", Usage: "`TEXT` saying why, shown with the maintenance check (with -enable)"},
		),
		Action: maintenance,
	}
}

func maintenance(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn maint -h\")", c.Args().First())
	}
	enable, disable := c.Bool("enable"), c.Bool("disable")
	switch {
	case enable == disable:
		return usagef(`give either -enable or -disable (see "cairn maint -h")`)
	case disable && c.IsSet("reason"):
		return usagef("-reason goes with -enable: leaving maintenance takes no reason")
	case c.IsSet("service") && c.String("service") == "":
		return usagef("-service is empty: give the ID of a service of the local agent")
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	agent, id, reason := client.Agent(), c.String("service"), c.String("reason")
	state := "enabled"
	if disable {
		state = "disabled"
	}
	switch {
	case id != "" && enable:
		err = agent.EnableServiceMaintenance(c.Context, id, reason)
	case id != "":
		err = agent.DisableServiceMaintenance(c.Context, id)
	case enable:
		err = agent.EnableNodeMaintenance(c.Context, reason)
	default:
		err = agent.DisableNodeMaintenance(c.Context)
	}
	if id != "" {
		if err != nil {
			return fmt.Errorf("service %q maintenance: %w", id, err)
		}
		_, err = fmt.Fprintf(c.App.Writer, "Service maintenance is now %s for %q\n", state, id)
		return err
	}
	if err != nil {
		return fmt.Errorf("node maintenance: %w", err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Node maintenance is now %s\n", state)
	return err
}

func healthCommand() *cli.Command {
	return &cli.Command{
		Name:      "health",
		Usage:     "Show the instances of a service with their health",
		UsageText: "cairn health [-passing] [-format table|json] [-http-addr ADDRESS] SERVICE",
		Description: "Lists every instance of SERVICE in the catalog with its aggregate status:\n" +
			"the worst of its checks and its node's (maintenance, then critical, then\n" +
			"warning, then passing; passing when it has none). With -passing, only\n" +
			"instances whose checks all pass. With -format json, prints an array of\n" +
			"objects with Node, ServiceID, Address, Port, Status and Checks.",
		ArgsUsage:    "SERVICE",
		OnUsageError: onUsageError("cairn health"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "passing", Usage: "list only instances whose checks all pass"},
			formatFlag(),
		),
		Action: serviceHealth,
	}
}

// instanceHealth is one instance as "cairn health -format json" prints it.
type instanceHealth struct {
	Node      string
	ServiceID string
	Address   string // the service's address, else its node's
	Port      int
	Status    string // the aggregate of Checks
	Checks    api.HealthChecks
}

func serviceHealth(c *cli.Context) error {
	name, err := oneArg(c, "cairn health", "SERVICE")
	if err != nil {
		return err
	}
	format, err := outputFormat(c, "cairn health")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	entries, _, err := client.Health().Service(c.Context, name, "", c.Bool("passing"))
	if err != nil {
		return fmt.Errorf("health of service %q: %w", name, err)
	}
	list := make([]instanceHealth, 0, len(entries))
	for _, e := range entries {
		if e == nil || e.Service == nil {
			continue
		}
		in := instanceHealth{
			ServiceID: e.Service.ID, Address: e.Service.Address, Port: e.Service.Port,
			Status: e.Checks.AggregatedStatus(), Checks: e.Checks,
		}
		if in.Checks == nil {
			in.Checks = api.HealthChecks{}
		}
		if e.Node != nil {
			in.Node = e.Node.Node
			if in.Address == "" {
				in.Address = e.Node.Address
			}
		}
		list = append(list, in)
	}
	slices.SortFunc(list, func(a, b instanceHealth) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.ServiceID, b.ServiceID))
	})
	if format == formatJSON {
		return writeJSON(c.App.Writer, list)
	}
	rows := [][]string{{"Node", "ServiceID", "Address", "Port", "Status", "Checks"}}
	for _, in := range list {
		rows = append(rows, []string{in.Node, in.ServiceID, in.Address, strconv.Itoa(in.Port), in.Status, checkCounts(in.Checks)})
	}
	return writeTable(c.App.Writer, rows)
}

// checkCounts summarises checks by status, worst first: "1 critical, 2 passing".
func checkCounts(checks api.HealthChecks) string {
	counts := map[string]int{}
	var order []string
	for _, c := range checks {
		if c == nil {
			continue
		}
		st := c.EffectiveStatus()
		if counts[st] == 0 {
			order = append(order, st)
		}
		counts[st]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(statusRank(b), statusRank(a)) })
	parts := make([]string, 0, len(order))
	for _, st := range order {
		parts = append(parts, strconv.Itoa(counts[st])+" "+st)
	}
	return strings.Join(parts, ", ")
}

// statusRank orders statuses from best to worst, an unknown one as critical.
func statusRank(status string) int {
	switch status {
	case api.HealthPassing:
		return 0
	case api.HealthWarning:
		return 1
	case api.HealthMaintenance:
		return 3
	}
	return 2
}
