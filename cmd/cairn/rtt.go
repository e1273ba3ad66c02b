package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func rttCommand() *cli.Command {
	return &cli.Command{
		Name:      "rtt",
		Usage:     "Estimate the network round trip time between two nodes",
		UsageText: "cairn rtt [-wan] [-http-addr ADDRESS] NODE [NODE]",
		Description: "Estimates the round trip time between two nodes from their network\n" +
			"coordinates, which the agents compute from their gossip probes and send\n" +
			"to the servers: no packet is sent between the two nodes. The second node\n" +
			"defaults to the local agent's. With -wan, the nodes are servers named\n" +
			"<node>.<dc> and their WAN coordinates are used (the second defaults to\n" +
			"the local agent, which must then be a server).",
		OnUsageError: onUsageError("cairn rtt"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "wan", Usage: "use WAN coordinates: servers named <node>.<dc>"},
		),
		Action: rtt,
	}
}

func rtt(c *cli.Context) error {
	if c.NArg() < 1 || c.NArg() > 2 {
		return usagef(`give one or two node names (see "cairn rtt -h")`)
	}
	a, b := c.Args().Get(0), c.Args().Get(1)
	client, err := newClient(c)
	if err != nil {
		return err
	}
	wan := c.Bool("wan")
	if b == "" {
		self, err := client.Agent().Self(c.Context)
		if err != nil {
			return fmt.Errorf("look up the local agent's node: %w", err)
		}
		b = self.Config.NodeName
		if wan {
			if !self.Config.Server {
				return usagef("-wan without a second node needs the local agent to be a server; name two servers as <node>.<dc>")
			}
			b += "." + self.Config.Datacenter
		}
	}
	var coords map[string]*api.NetworkCoordinate
	if wan {
		coords, err = wanCoordinates(c, client)
	} else {
		coords, err = lanCoordinates(c, client)
	}
	if err != nil {
		return err
	}
	ca, cb := coords[strings.ToLower(a)], coords[strings.ToLower(b)]
	for _, n := range []struct {
		name string
		c    *api.NetworkCoordinate
	}{{a, ca}, {b, cb}} {
		if n.c == nil {
			return fmt.Errorf("no network coordinate for node %q: unknown, or it has not sent one yet (agents send theirs every 10-20s)", n.name)
		}
	}
	d, ok := api.RTT(ca, cb)
	if !ok {
		return errors.New("the two coordinates have different dimensions and cannot be compared")
	}
	source := "LAN"
	if wan {
		source = "WAN"
	}
	_, err = fmt.Fprintf(c.App.Writer, "Estimated %s <-> %s rtt: %.3f ms (using %s coordinates)\n", a, b, d.Seconds()*1000, source)
	return err
}

// lanCoordinates returns every node's LAN coordinate by lowercased name.
func lanCoordinates(c *cli.Context, client *api.Client) (map[string]*api.NetworkCoordinate, error) {
	entries, _, err := client.Coordinate().Nodes(c.Context)
	if err != nil {
		return nil, fmt.Errorf("read the nodes' coordinates: %w", err)
	}
	out := make(map[string]*api.NetworkCoordinate, len(entries))
	for _, e := range entries {
		out[strings.ToLower(e.Node)] = e.Coord
	}
	return out, nil
}

// wanCoordinates returns every server's WAN coordinate by lowercased
// "<node>.<dc>".
func wanCoordinates(c *cli.Context, client *api.Client) (map[string]*api.NetworkCoordinate, error) {
	dcs, err := client.Coordinate().Datacenters(c.Context)
	if err != nil {
		return nil, fmt.Errorf("read the servers' WAN coordinates: %w", err)
	}
	out := map[string]*api.NetworkCoordinate{}
	for _, dc := range dcs {
		for _, e := range dc.Coordinates {
			out[strings.ToLower(e.Node+"."+dc.Datacenter)] = e.Coord
		}
	}
	return out, nil
}
