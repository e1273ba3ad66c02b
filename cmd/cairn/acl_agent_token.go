package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// agentTokenKinds are the kinds `cairn acl set-agent-token` takes, as
// Consul's.
var agentTokenKinds = []string{"default", "agent", "agent_recovery", "replication", "config_file_service_registration", "dns"}

func aclSetAgentTokenCommand() *cli.Command {
	return &cli.Command{
		Name:      "set-agent-token",
		Usage:     "Set one of the local agent's own ACL tokens while it runs",
		UsageText: "cairn acl set-agent-token [-http-addr ADDRESS] KIND TOKEN",
		Description: "KIND is default (requests without a token), agent (the agent's own\n" +
			"registrations), dns (DNS answers), agent_recovery, replication or\n" +
			"config_file_service_registration. TOKEN is the secret; - reads it from\n" +
			"standard input, so that it does not show in the process list. The agent\n" +
			"keeps it until it restarts, or for good with acl.enable_token_persistence.\n" +
			"Needs acl:write.",
		OnUsageError: onUsageError("cairn acl set-agent-token"),
		Flags:        agentFlags(),
		Action:       aclSetAgentToken,
	}
}

func aclSetAgentToken(c *cli.Context) error {
	if c.NArg() != 2 {
		return usagef("want KIND and TOKEN, got %d arguments (see \"cairn acl set-agent-token -h\")", c.NArg())
	}
	kind, secret := c.Args().Get(0), c.Args().Get(1)
	if kind == "agent_master" { // Consul's older name
		kind = "agent_recovery"
	}
	known := false
	for _, k := range agentTokenKinds {
		known = known || k == kind
	}
	if !known {
		return usagef("KIND %q: want one of %s", kind, strings.Join(agentTokenKinds, ", "))
	}
	if secret == "-" {
		b, err := io.ReadAll(io.LimitReader(c.App.Reader, 4096))
		if err != nil {
			return fmt.Errorf("read the token: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	if err := client.ACL().SetAgentToken(c.Context, kind, secret); err != nil {
		return fmt.Errorf("set agent token %s: %w", kind, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "ACL token %q set successfully\n", kind)
	return err
}
