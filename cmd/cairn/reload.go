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
		Description: "Tells the local agent to read its -config-file and flags again and apply\n" +
			"what can change while it runs: log_level and the TLS certificates (other\n" +
			"settings are logged and need a restart). A bad file is refused, naming\n" +
			"the key, and the agent keeps the configuration it runs with. Sending the\n" +
			"agent SIGHUP does the same.",
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
