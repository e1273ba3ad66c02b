package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func catalogCommand() *cli.Command {
	return &cli.Command{
		Name:         "catalog",
		Usage:        "List the services and nodes of the datacenter's catalog, and the datacenters",
		UsageText:    "cairn catalog <services|nodes|datacenters> [options]",
		OnUsageError: onUsageError("cairn catalog"),
		Action:       groupAction("cairn catalog"),
		Subcommands: []*cli.Command{
			{
				Name:      "services",
				Usage:     "List the names of all services in the catalog",
				UsageText: "cairn catalog services [-tags] [-node NODE] [-format table|json] [-http-addr ADDRESS]",
				Description: "Prints one service name a line, sorted; with -tags, each name's tags beside it.\n" +
					"With -node, only the services with an instance on NODE. With -format json,\n" +
					"prints an object mapping each name to its tags.",
				OnUsageError: onUsageError("cairn catalog services"),
				Flags: agentFlags(
					&cli.BoolFlag{Name: "tags", Usage: "show the tags of each service"},
					&cli.StringFlag{Name: "node", Usage: "only the services on node `NODE`"},
					formatFlag(),
				),
				Action: catalogServices,
			},
			{
				Name:         "nodes",
				Usage:        "List the nodes in the catalog",
				UsageText:    "cairn catalog nodes [-format table|json] [-http-addr ADDRESS]",
				Description:  "Lists the nodes sorted by name. With -format json, prints an array of\nobjects with ID, Node, Address, Datacenter, Meta, CreateIndex and ModifyIndex.",
				OnUsageError: onUsageError("cairn catalog nodes"),
				Flags:        agentFlags(formatFlag()),
				Action:       catalogNodes,
			},
			{
				Name:      "datacenters",
				Usage:     "List the datacenters the agent knows",
				UsageText: "cairn catalog datacenters [-format table|json] [-http-addr ADDRESS]",
				Description: "Prints one datacenter name a line, sorted: the agent's own and those\n" +
					"whose servers are in its servers' WAN pool.",
				OnUsageError: onUsageError("cairn catalog datacenters"),
				Flags:        agentFlags(formatFlag()),
				Action:       catalogDatacenters,
			},
		},
	}
}

func catalogServices(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn catalog services -h\")", c.Args().First())
	}
	format, err := outputFormat(c, "cairn catalog services")
	if err != nil {
		return err
	}
	node := c.String("node")
	if c.IsSet("node") && strings.TrimSpace(node) == "" {
		return usagef("-node is empty")
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	var services map[string][]string
	if node != "" {
		if services, err = servicesOnNode(c, client, node); err != nil {
			return fmt.Errorf("list the services of node %q: %w", node, err)
		}
	} else if services, _, err = client.Catalog().Services(c.Context); err != nil {
		return fmt.Errorf("list catalog services: %w", err)
	}
	for name, tags := range services {
		tags = slices.Clone(tags)
		sort.Strings(tags)
		services[name] = tags
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, services)
	}
	names := make([]string, 0, len(services))
	for name := range services {
		names = append(names, name)
	}
	sort.Strings(names)
	rows := make([][]string, 0, len(names))
	for _, name := range names {
		if !c.Bool("tags") {
			rows = append(rows, []string{name})
			continue
		}
		rows = append(rows, []string{name, strings.Join(services[name], ",")})
	}
	return writeTable(c.App.Writer, rows)
}

// servicesOnNode returns the services registered on node, with their
// tags, in the shape of the catalog's service list (one call: GET
// /v1/catalog/node/<node>). An unknown node has none.
func servicesOnNode(c *cli.Context, client *api.Client, node string) (map[string][]string, error) {
	n, _, err := client.Catalog().Node(c.Context, node)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	if n == nil {
		return out, nil
	}
	for _, svc := range n.Services {
		tags := out[svc.Service]
		if tags == nil {
			tags = []string{}
		}
		for _, t := range svc.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		out[svc.Service] = tags
	}
	return out, nil
}

func catalogNodes(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn catalog nodes -h\")", c.Args().First())
	}
	format, err := outputFormat(c, "cairn catalog nodes")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	nodes, _, err := client.Catalog().Nodes(c.Context)
	if err != nil {
		return fmt.Errorf("list catalog nodes: %w", err)
	}
	nodes = slices.DeleteFunc(nodes, func(n *api.Node) bool { return n == nil })
	slices.SortFunc(nodes, func(a, b *api.Node) int { return strings.Compare(a.Node, b.Node) })
	if format == formatJSON {
		return writeJSON(c.App.Writer, nodes)
	}
	rows := [][]string{{"Node", "Address", "DC"}}
	for _, n := range nodes {
		rows = append(rows, []string{n.Node, n.Address, n.Datacenter})
	}
	return writeTable(c.App.Writer, rows)
}

func catalogDatacenters(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn catalog datacenters -h\")", c.Args().First())
	}
	format, err := outputFormat(c, "cairn catalog datacenters")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	dcs, err := client.Catalog().Datacenters(c.Context)
	if err != nil {
		return fmt.Errorf("list datacenters: %w", err)
	}
	if format == formatJSON {
		return writeJSON(c.App.Writer, dcs)
	}
	for _, dc := range dcs {
		if _, err := fmt.Fprintln(c.App.Writer, dc); err != nil {
			return err
		}
	}
	return nil
}
