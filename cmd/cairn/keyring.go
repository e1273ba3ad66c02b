package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func keyringCommand() *cli.Command {
	return &cli.Command{
		Name:  "keyring",
		Usage: "List and rotate the gossip encryption keys",
		UsageText: "cairn keyring -list|-list-primary [-local-only] [-http-addr ADDRESS]\n" +
			"cairn keyring -install KEY|-use KEY|-remove KEY [-http-addr ADDRESS]",
		Description: "Lists or changes the keys that encrypt gossip, on every alive member of\n" +
			"the agent's pools: the WAN pool (asked of a server) and the agent's LAN\n" +
			"pool. To rotate a key with nobody falling out, run in turn:\n" +
			"\n" +
			"   cairn keyring -install NEW   every member can decrypt with NEW\n" +
			"   cairn keyring -use NEW       every member encrypts with NEW\n" +
			"   cairn keyring -remove OLD    OLD is gone\n" +
			"\n" +
			"-use is refused while some member lacks the key, -remove while some\n" +
			"member encrypts with it. Ask a server, so that the WAN pool follows too,\n" +
			"and one agent of each other datacenter. Each agent keeps its keyring in\n" +
			"its data dir, so a restart keeps the keys. Exits 1 if a member did not\n" +
			"confirm. Make keys with \"cairn keygen\".",
		OnUsageError: onUsageError("cairn keyring"),
		Flags: agentFlags(
			&cli.BoolFlag{Name: "list", Usage: "list the keys and how many members hold each"},
			&cli.BoolFlag{Name: "list-primary", Usage: "list only the primary keys (those that encrypt)"},
			&cli.StringFlag{Name: "install", Usage: "install `KEY` on every member, for decryption"},
			&cli.StringFlag{Name: "use", Usage: "make `KEY` the primary key of every member"},
			&cli.StringFlag{Name: "remove", Usage: "remove `KEY` from every member"},
			&cli.BoolFlag{Name: "local-only", Usage: "with -list: the agent's LAN pool only"},
		),
		Action: keyring,
	}
}

func keyring(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (see \"cairn keyring -h\")", c.Args().First())
	}
	var actions []string
	for _, name := range []string{"list", "list-primary", "install", "use", "remove"} {
		if c.IsSet(name) {
			actions = append(actions, "-"+name)
		}
	}
	switch {
	case len(actions) == 0:
		return usagef("one of -list, -list-primary, -install, -use or -remove is required (see \"cairn keyring -h\")")
	case len(actions) > 1:
		return usagef("only one of %s at a time", strings.Join(actions, ", "))
	case c.Bool("local-only") && !c.Bool("list") && !c.Bool("list-primary"):
		return usagef("-local-only goes with -list or -list-primary")
	}
	for _, name := range []string{"install", "use", "remove"} {
		if c.IsSet(name) && c.String(name) == "" {
			return usagef("-%s needs a KEY (cairn keygen makes one)", name)
		}
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	out, op := c.App.Writer, client.Operator()
	switch {
	case c.IsSet("install"):
		fmt.Fprintln(out, "==> Installing new gossip encryption key...")
		if err := op.KeyringInstall(c.Context, c.String("install")); err != nil {
			return fmt.Errorf("install the gossip key: %w", err)
		}
		return nil
	case c.IsSet("use"):
		fmt.Fprintln(out, "==> Changing primary gossip encryption key...")
		if err := op.KeyringUse(c.Context, c.String("use")); err != nil {
			return fmt.Errorf("use the gossip key: %w", err)
		}
		return nil
	case c.IsSet("remove"):
		fmt.Fprintln(out, "==> Removing gossip encryption key...")
		if err := op.KeyringRemove(c.Context, c.String("remove")); err != nil {
			return fmt.Errorf("remove the gossip key: %w", err)
		}
		return nil
	}
	fmt.Fprintln(out, "==> Gathering installed encryption keys...")
	pools, err := op.KeyringList(c.Context, c.Bool("local-only"))
	if err != nil {
		return fmt.Errorf("list the gossip keys: %w", err)
	}
	return writeKeyring(out, pools, c.Bool("list-primary"))
}

// writeKeyring prints each pool's keys as Consul does, "  KEY [held/alive]",
// sorted, then what its members reported, "  ! member: message".
func writeKeyring(w io.Writer, pools []*api.KeyringResponse, primaryOnly bool) error {
	var b strings.Builder
	for _, p := range pools {
		if p == nil {
			continue
		}
		name := p.Datacenter + " (LAN)"
		if p.WAN {
			name = "WAN"
		}
		keys := p.Keys
		if primaryOnly {
			keys = p.PrimaryKeys
		}
		fmt.Fprintf(&b, "\n%s:\n", name)
		for _, key := range slices.Sorted(maps.Keys(keys)) {
			fmt.Fprintf(&b, "  %s [%d/%d]\n", key, keys[key], p.NumNodes)
		}
		for _, member := range slices.Sorted(maps.Keys(p.Messages)) {
			fmt.Fprintf(&b, "  ! %s: %s\n", member, p.Messages[member])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
