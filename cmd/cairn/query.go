package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func queryCommand() *cli.Command {
	idArg := func(name string) string { return "cairn query " + name + " <ID> [-http-addr ADDRESS]" }
	return &cli.Command{
		Name:         "query",
		Usage:        "Define, list and run prepared queries (service lookups with failover to other datacenters)",
		UsageText:    "cairn query <create|list|get|delete|execute> [options]",
		OnUsageError: onUsageError("cairn query"),
		Action:       groupAction("cairn query"),
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "Define a prepared query and print its ID",
				UsageText: "cairn query create -service NAME [-name NAME] [-tag TAG]... [-only-passing] [-nearest N] [-failover-dc DC]... [-ttl DURATION]",
				Description: "A named query is answered in DNS as <name>.query.<domain>. A tag written !TAG\n" +
					"excludes instances carrying it.",
				OnUsageError: onUsageError("cairn query create"),
				Flags: agentFlags(
					&cli.StringFlag{Name: "name", Usage: "the query's `NAME`, a DNS label (optional)"},
					&cli.StringFlag{Name: "service", Usage: "the `SERVICE` the query looks up (required)"},
					&cli.StringSliceFlag{Name: "tag", Usage: "a `TAG` every instance must carry, or !TAG none may; repeat for several"},
					&cli.BoolFlag{Name: "only-passing", Usage: "leave out instances with a warning check"},
					&cli.IntFlag{Name: "nearest", Usage: "fail over to the `N` nearest other datacenters first"},
					&cli.StringSliceFlag{Name: "failover-dc", Usage: "a `DC` to fail over to, in order; repeat for several"},
					&cli.StringFlag{Name: "ttl", Usage: "TTL of the query's DNS answers, e.g. 10s (default: the service's)"},
					&cli.StringFlag{Name: "near", Usage: "sort answers nearest first from `NODE` (_agent: the agent executing the query)"},
				),
				Action: queryCreate,
			},
			{
				Name:         "list",
				Usage:        "List the prepared queries",
				UsageText:    "cairn query list [-http-addr ADDRESS]",
				OnUsageError: onUsageError("cairn query list"),
				Flags:        agentFlags(),
				Action:       queryList,
			},
			{
				Name:         "get",
				Usage:        "Print a prepared query's definition as JSON",
				UsageText:    idArg("get"),
				OnUsageError: onUsageError("cairn query get"),
				Flags:        agentFlags(),
				Action:       queryGet,
			},
			{
				Name:         "delete",
				Usage:        "Delete a prepared query",
				UsageText:    idArg("delete"),
				OnUsageError: onUsageError("cairn query delete"),
				Flags:        agentFlags(),
				Action:       queryDelete,
			},
			{
				Name:         "execute",
				Usage:        "Run a prepared query and list the instances it answers with",
				UsageText:    "cairn query execute <ID or NAME> [-dc DC] [-http-addr ADDRESS]",
				OnUsageError: onUsageError("cairn query execute"),
				Flags: agentFlags(
					&cli.StringFlag{Name: "dc", Usage: "run the query of datacenter `DC` (default: the agent's)"},
				),
				Action: queryExecute,
			},
		},
	}
}

func queryCreate(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn query create -h\")", c.Args().First())
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	def := &api.PreparedQueryDefinition{
		Name: c.String("name"),
		Service: api.ServiceQuery{
			Service: c.String("service"), Tags: c.StringSlice("tag"), OnlyPassing: c.Bool("only-passing"),
			Failover: api.QueryFailoverOptions{NearestN: c.Int("nearest"), Datacenters: c.StringSlice("failover-dc")},
			Near:     c.String("near"),
		},
		DNS: api.QueryDNSOptions{TTL: c.String("ttl")},
	}
	id, err := client.PreparedQuery().Create(c.Context, def)
	if err != nil {
		return fmt.Errorf("create query: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, id)
	return err
}

func queryList(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn query list -h\")", c.Args().First())
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	list, _, err := client.PreparedQuery().List(c.Context)
	if err != nil {
		return fmt.Errorf("list queries: %w", err)
	}
	rows := [][]string{{"ID", "Name", "Service", "Failover"}}
	for _, q := range list {
		var failover []string
		if n := q.Service.Failover.NearestN; n > 0 {
			failover = append(failover, "nearest "+strconv.Itoa(n))
		}
		failover = append(failover, q.Service.Failover.Datacenters...)
		rows = append(rows, []string{q.ID, q.Name, q.Service.Service, strings.Join(failover, ",")})
	}
	return writeTable(c.App.Writer, rows)
}

// queryArg returns the command's single argument, named what in errors.
func queryArg(c *cli.Context, cmd, what string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("want exactly one %s (see \"cairn query %s -h\")", what, cmd)
	}
	return c.Args().First(), nil
}

func queryGet(c *cli.Context) error {
	id, err := queryArg(c, "get", "query ID")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	list, _, err := client.PreparedQuery().Get(c.Context, id)
	if err != nil {
		return fmt.Errorf("get query %s: %w", id, err)
	}
	if len(list) != 1 {
		return fmt.Errorf("get query %s: the agent answered %d queries", id, len(list))
	}
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(list[0])
}

func queryDelete(c *cli.Context) error {
	id, err := queryArg(c, "delete", "query ID")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.PreparedQuery().Delete(c.Context, id); err != nil {
		return fmt.Errorf("delete query %s: %w", id, err)
	}
	return nil
}

func queryExecute(c *cli.Context) error {
	key, err := queryArg(c, "execute", "query ID or name")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	res, err := client.PreparedQuery().Execute(c.Context, key, c.String("dc"))
	if err != nil {
		return fmt.Errorf("execute query %s: %w", key, err)
	}
	rows := [][]string{{"Node", "Address", "Port", "DC"}}
	for _, e := range res.Nodes {
		if e.Node == nil || e.Service == nil {
			continue
		}
		addr := e.Service.Address
		if addr == "" {
			addr = e.Node.Address
		}
		rows = append(rows, []string{e.Node.Node, addr, strconv.Itoa(e.Service.Port), res.Datacenter})
	}
	if err := writeTable(c.App.Writer, rows); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%d instance(s) of %s from %s after %d failover(s)\n", len(rows)-1, res.Service, res.Datacenter, res.Failovers)
	return err
}
