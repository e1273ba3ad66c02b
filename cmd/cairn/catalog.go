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
				Name:         "services",
				Usage:        "List the names of all services in the catalog",
				UsageText:    "cairn catalog services [-tags] [-http-addr ADDRESS]",
				Description:  "Prints one service name a line, sorted; with -tags, each name's tags beside it.",
				OnUsageError: onUsageError("cairn catalog services"),
				Flags: []cli.Flag{
					httpAddrFlag(),
					&cli.BoolFlag{Name: "tags", Usage: "show the tags of each service"},
				},
				Action: catalogServices,
			},
			{
				Name:         "nodes",
				Usage:        "List the nodes in the catalog",
				UsageText:    "cairn catalog nodes [-http-addr ADDRESS]",
				OnUsageError: onUsageError("cairn catalog nodes"),
				Flags:        []cli.Flag{httpAddrFlag()},
				Action:       catalogNodes,
			},
			{
				Name:      "datacenters",
				Usage:     "List the datacenters the agent knows",
				UsageText: "cairn catalog datacenters [-http-addr ADDRESS]",
				Description: "Prints one datacenter name a line, sorted: the agent's own and those\n" +
					"whose servers are in its servers' WAN pool.",
				OnUsageError: onUsageError("cairn catalog datacenters"),
				Flags:        []cli.Flag{httpAddrFlag()},
				Action:       catalogDatacenters,
			},
		},
	}
}

func catalogServices(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn catalog services -h\")", c.Args().First())
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	services, _, err := client.Catalog().Services(c.Context)
	if err != nil {
		return fmt.Errorf("list catalog services: %w", err)
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
		tags := slices.Clone(services[name])
		sort.Strings(tags)
		rows = append(rows, []string{name, strings.Join(tags, ",")})
	}
	return writeTable(c.App.Writer, rows)
}

func catalogNodes(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn catalog nodes -h\")", c.Args().First())
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
	client, err := newClient(c)
	if err != nil {
		return err
	}
	dcs, err := client.Catalog().Datacenters(c.Context)
	if err != nil {
		return fmt.Errorf("list datacenters: %w", err)
	}
	for _, dc := range dcs {
		if _, err := fmt.Fprintln(c.App.Writer, dc); err != nil {
			return err
		}
	}
	return nil
}
