package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func reloadCommand() *cli.Command {
	return &cli.Command{
		Name:      "reload",
		Usage:     "Make the local agent read its configuration again",
		UsageText: "cairn reload [-http-addr ADDRESS]",
		Description: "Tells the local agent to read its -config-file and -config-dir files and its\n" +
			"flags again and apply what can change while it runs: log_level, the\n" +
			"services of the config files and the TLS certificates. The agent logs what\n" +
			"it applied, and the changed keys that need a restart (it keeps their\n" +
			"running values). A bad file is refused, naming the key or the file, and\n" +
			"the agent keeps the configuration it runs with. Sending the agent SIGHUP\n" +
			"does the same.",
		OnUsageError: onUsageError("cairn reload"),
		Flags:        agentFlags(),
		Action:       reloadAgent,
	}
}

func reloadAgent(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn reload -h\")", c.Args().First())
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.Agent().Reload(c.Context); err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, "Configuration reload triggered")
	return err
}
