package main

import (
	"context"
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
			"every pool the key is in: the WAN pool of all servers and the LAN pool of\n" +
			"every datacenter, whichever agent is asked (the servers carry it out). To\n" +
			"rotate a key with nobody falling out, run in turn:\n" +
			"\n" +
			"   cairn keyring -install NEW   every member can decrypt with NEW\n" +
			"   cairn keyring -use NEW       every member encrypts with NEW\n" +
			"   cairn keyring -remove OLD    OLD is gone\n" +
			"\n" +
			"-use is refused while some member lacks the key, -remove while some\n" +
			"member encrypts with it. Each change prints, per pool, how many members\n" +
			"it reached and which failed. Each agent keeps its keyring in its data dir,\n" +
			"so a restart keeps the keys. Exits 1 if any pool failed or was refused\n" +
			"(sending the change again is safe). Make keys with \"cairn keygen\".",
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
	for _, ch := range []struct {
		flag, doing, what string
		do                func(context.Context, string) ([]*api.KeyringResponse, error)
	}{
		{"install", "Installing new gossip encryption key", "install the gossip key", op.KeyringInstall},
		{"use", "Changing primary gossip encryption key", "use the gossip key", op.KeyringUse},
		{"remove", "Removing gossip encryption key", "remove the gossip key", op.KeyringRemove},
	} {
		if !c.IsSet(ch.flag) {
			continue
		}
		fmt.Fprintf(out, "==> %s...\n", ch.doing)
		pools, err := ch.do(c.Context, c.String(ch.flag))
		if err != nil {
			return fmt.Errorf("%s: %w", ch.what, err)
		}
		return writeKeyring(out, pools, ch.what, writeChange)
	}
	fmt.Fprintln(out, "==> Gathering installed encryption keys...")
	pools, err := op.KeyringList(c.Context, c.Bool("local-only"))
	if err != nil {
		return fmt.Errorf("list the gossip keys: %w", err)
	}
	mode := writeKeys
	if c.Bool("list-primary") {
		mode = writePrimaryKeys
	}
	return writeKeyring(out, pools, "list the gossip keys", mode)
}

// What writeKeyring writes of each pool.
const (
	writeKeys        = iota // its keys, with how many members hold each
	writePrimaryKeys        // its primary keys
	writeChange             // how many members a change reached
)

// writeKeyring prints each pool: for a list its keys as Consul does,
// "  KEY [held/alive]", sorted; for a change "POOL: N nodes, E errors";
// then what went wrong, "  ! member: message" and "  ! failed: why". It
// returns an error naming the pools that failed, if any did: an agent
// reports those as an error status, so this only catches one that does
// not.
func writeKeyring(w io.Writer, pools []*api.KeyringResponse, what string, mode int) error {
	var b strings.Builder
	var failed []string
	for _, p := range pools {
		if p == nil {
			continue
		}
		name := p.Datacenter + " (LAN)"
		if p.WAN {
			name = "WAN"
		}
		if mode == writeChange {
			fmt.Fprintf(&b, "%s: %d %s, %d %s\n", name, p.NumNodes, plural(p.NumNodes, "node"), p.NumErrs, plural(p.NumErrs, "error"))
		} else {
			keys := p.Keys
			if mode == writePrimaryKeys {
				keys = p.PrimaryKeys
			}
			fmt.Fprintf(&b, "\n%s:\n", name)
			for _, key := range slices.Sorted(maps.Keys(keys)) {
				fmt.Fprintf(&b, "  %s [%d/%d]\n", key, keys[key], p.NumNodes)
			}
		}
		for _, member := range slices.Sorted(maps.Keys(p.Messages)) {
			fmt.Fprintf(&b, "  ! %s: %s\n", member, p.Messages[member])
		}
		if p.Error != "" {
			fmt.Fprintf(&b, "  ! failed: %s\n", p.Error)
		}
		if p.Error != "" || p.NumErrs > 0 {
			failed = append(failed, name)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: failed in %s", what, strings.Join(failed, ", "))
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
