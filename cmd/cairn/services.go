package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func servicesCommand() *cli.Command {
	return &cli.Command{
		Name:         "services",
		Usage:        "Register, deregister and list the services of the local agent",
		UsageText:    "cairn services <register|deregister|list> [options]",
		OnUsageError: onUsageError("cairn services"),
		Action:       groupAction("cairn services"),
		Subcommands: []*cli.Command{
			registerCommand(),
			deregisterCommand(),
			listCommand(),
		},
	}
}

func registerCommand() *cli.Command {
	return &cli.Command{
		Name:  "register",
		Usage: "Register a service with the local agent",
		UsageText: "cairn services register -name web -port 8080 [-id web-1] [-tag v1]... [-meta key=value]...\n" +
			"    [-check-http URL | -check-tcp ADDR | -check-udp ADDR | -check-grpc ADDR | -check-ttl DURATION | -check-args ARG...]\n" +
			"    [-check-interval DURATION] [-check-timeout DURATION] [-check-status STATUS] [-check-deregister-after DURATION]\n" +
			"cairn services register [-http-addr ADDRESS] FILE",
		Description: "Registers one service, described by flags or by a file. The file is JSON\n" +
			"when its name ends in .json and HCL otherwise; it holds either the\n" +
			"registration itself ({\"Name\": \"web\", \"Port\": 8080}) or Consul's service\n" +
			"definition ({\"service\": {\"name\": \"web\", \"port\": 8080}}), with the keys\n" +
			"id, name, tags, port, address, meta, weights, check and checks (any case;\n" +
			"a check's keys as in Consul: http, tcp, ttl, args, interval,\n" +
			"deregister_critical_service_after, …).\n" +
			"The -check flags give the service one health check (its ID is\n" +
			"\"service:<id>\"); -check-interval is required for all but -check-ttl.",
		ArgsUsage:    "[FILE]",
		OnUsageError: onUsageError("cairn services register"),
		Flags: append(agentFlags(
			&cli.StringFlag{Name: "name", Usage: "service `NAME` (required without FILE)"},
			&cli.StringFlag{Name: "id", Usage: "service `ID`, unique on this agent", DefaultText: "the name"},
			&cli.IntFlag{Name: "port", Usage: "service `PORT`", DefaultText: "none"},
			&cli.StringFlag{Name: "address", Usage: "service `IP` or host name", DefaultText: "the node's address"},
			&cli.StringSliceFlag{Name: "tag", Usage: "a `TAG` of the service; repeat for several"},
			&cli.StringSliceFlag{Name: "meta", Usage: "metadata `key=value`; repeat for several"},
			&cli.IntFlag{Name: "weight-passing", Usage: "SRV `WEIGHT` while passing", DefaultText: "1"},
			&cli.IntFlag{Name: "weight-warning", Usage: "SRV `WEIGHT` while warning", DefaultText: "1"},
		), checkFlags()...),
		Action: registerService,
	}
}

func registerService(c *cli.Context) error {
	reg, err := registrationFromArgs(c)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.Agent().ServiceRegister(c.Context, reg); err != nil {
		return fmt.Errorf("register service %q: %w", reg.Name, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Registered service: %s\n", reg.Name)
	return err
}

// registrationFromArgs reads the service from FILE or from the flags.
func registrationFromArgs(c *cli.Context) (*api.AgentServiceRegistration, error) {
	file, err := fileArg(c, "cairn services register")
	if err != nil {
		return nil, err
	}
	if file != "" {
		// The flags describing the service cannot be combined with a file.
		for _, name := range append([]string{"name", "id", "port", "address", "tag", "meta", "weight-passing", "weight-warning"},
			checkFlagsSet(c)...) {
			if c.IsSet(name) {
				return nil, usagef("give either FILE or -%s and the other service flags, not both", name)
			}
		}
		return readServiceFile(file)
	}
	if c.String("name") == "" {
		return nil, usagef("missing -name: give the service with -name and -port, " +
			"or a service definition FILE (see \"cairn services register -h\")")
	}
	reg := &api.AgentServiceRegistration{
		ID:      c.String("id"),
		Name:    c.String("name"),
		Port:    c.Int("port"),
		Address: c.String("address"),
		Tags:    c.StringSlice("tag"),
	}
	if reg.Meta, err = parseMeta("meta", c.StringSlice("meta")); err != nil {
		return nil, err
	}
	if reg.Check, err = checkFromFlags(c); err != nil {
		return nil, err
	}
	if c.IsSet("weight-passing") || c.IsSet("weight-warning") {
		// Unset weights keep the agent's defaults, 1 and 1.
		reg.Weights = &api.AgentWeights{Passing: 1, Warning: 1}
		if c.IsSet("weight-passing") {
			reg.Weights.Passing = c.Int("weight-passing")
		}
		if c.IsSet("weight-warning") {
			reg.Weights.Warning = c.Int("weight-warning")
		}
	}
	return reg, nil
}

// fileArg returns the optional single FILE argument.
func fileArg(c *cli.Context, path string) (string, error) {
	switch c.NArg() {
	case 0:
		return "", nil
	case 1:
		return c.Args().First(), nil
	}
	if strings.HasPrefix(c.Args().Get(1), "-") {
		return "", usagef("unknown flag %q after FILE %q (see \"%s -h\")", c.Args().Get(1), c.Args().First(), path)
	}
	return "", usagef("want at most one FILE, got %d arguments (see \"%s -h\")", c.NArg(), path)
}

// parseMeta turns the values of a repeated "key=value" flag into a map.
func parseMeta(flag string, pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	meta := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("-%s %q: want key=value", flag, p)
		}
		if _, dup := meta[k]; dup {
			return nil, usagef("-%s %q: key %q given twice", flag, p, k)
		}
		meta[k] = v
	}
	return meta, nil
}

func deregisterCommand() *cli.Command {
	return &cli.Command{
		Name:  "deregister",
		Usage: "Deregister a service from the local agent",
		UsageText: "cairn services deregister -id web-1\n" +
			"cairn services deregister [-http-addr ADDRESS] FILE",
		Description: "Removes the service with the given ID, or the one FILE describes (its\n" +
			"id, or its name when it has no id), the same file it was registered from.",
		ArgsUsage:    "[FILE]",
		OnUsageError: onUsageError("cairn services deregister"),
		Flags: agentFlags(
			&cli.StringFlag{Name: "id", Usage: "`ID` of the service to remove"},
		),
		Action: deregisterService,
	}
}

func deregisterService(c *cli.Context) error {
	file, err := fileArg(c, "cairn services deregister")
	if err != nil {
		return err
	}
	id := c.String("id")
	switch {
	case file != "" && c.IsSet("id"):
		return usagef("give either -id or FILE, not both")
	case file != "":
		reg, err := readServiceFile(file)
		if err != nil {
			return err
		}
		id = reg.ID
		if id == "" {
			id = reg.Name
		}
	case id == "":
		return usagef("missing -id: give the service ID with -id, or the service definition FILE " +
			"it was registered from (see \"cairn services deregister -h\")")
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.Agent().ServiceDeregister(c.Context, id); err != nil {
		return fmt.Errorf("deregister service %q: %w", id, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Deregistered service: %s\n", id)
	return err
}

func listCommand() *cli.Command {
	return &cli.Command{
		Name:         "list",
		Usage:        "List the services registered on the local agent",
		UsageText:    "cairn services list [-format table|json] [-http-addr ADDRESS]",
		Description:  "Lists the local agent's services sorted by ID. With -format json, prints an\narray of objects with ID, Service, Tags, Address, Port, Meta, Weights and Datacenter.",
		OnUsageError: onUsageError("cairn services list"),
		Flags:        agentFlags(formatFlag()),
		Action:       listServices,
	}
}

func listServices(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn services list -h\")", c.Args().First())
	}
	format, err := outputFormat(c, "cairn services list")
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	services, err := client.Agent().Services(c.Context)
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	ids := make([]string, 0, len(services))
	for id, s := range services {
		if s != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if format == formatJSON {
		list := make([]*api.AgentService, 0, len(ids))
		for _, id := range ids {
			list = append(list, services[id])
		}
		return writeJSON(c.App.Writer, list)
	}
	rows := [][]string{{"ID", "Name", "Address", "Port", "Tags"}}
	for _, id := range ids {
		s := services[id]
		if s == nil {
			continue
		}
		rows = append(rows, []string{id, s.Service, s.Address, strconv.Itoa(s.Port), strings.Join(s.Tags, ",")})
	}
	return writeTable(c.App.Writer, rows)
}
