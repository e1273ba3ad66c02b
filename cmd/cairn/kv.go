package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

func kvCommand() *cli.Command {
	return &cli.Command{
		Name:         "kv",
		Usage:        "Read, write and delete keys of the key/value store",
		UsageText:    "cairn kv <get|put|delete|export|import> [options]",
		OnUsageError: onUsageError("cairn kv"),
		Action:       groupAction("cairn kv"),
		Subcommands: []*cli.Command{
			{
				Name:      "get",
				Usage:     "Print a key's value, or the keys and values under a prefix",
				UsageText: "cairn kv get [-recurse] [-keys [-separator SEP]] [-detailed] [-base64] KEY",
				Description: "Prints the value as it is stored. -recurse prints KEY:VALUE for every key\n" +
					"starting with KEY; -keys prints the keys under KEY, cut after the separator\n" +
					"(\"/\" by default), one level as a directory listing. A key that does not\n" +
					"exist is an error.",
				OnUsageError: onUsageError("cairn kv get"),
				Flags: agentFlags(
					&cli.BoolFlag{Name: "recurse", Usage: "print every key starting with KEY, with its value"},
					&cli.BoolFlag{Name: "keys", Usage: "print the keys under KEY, not values"},
					&cli.StringFlag{Name: "separator", Value: "/", Usage: "with -keys, cut keys after this `SEP` (\"\" for none)"},
					&cli.BoolFlag{Name: "detailed", Usage: "print every field of the entries, not only values"},
					&cli.BoolFlag{Name: "base64", Usage: "print values base64-encoded"},
					&cli.BoolFlag{Name: "stale", Usage: "let any server answer, possibly a little behind the leader"},
				),
				Action: kvGet,
			},
			{
				Name:      "put",
				Usage:     "Write a key's value",
				UsageText: "cairn kv put [-flags N] [-cas -modify-index N] [-base64] KEY [VALUE|-|@FILE]",
				Description: "VALUE is written as it is; - reads it from stdin, @FILE from a file, and no\n" +
					"VALUE writes an empty one. With -cas the write is made only if the key's\n" +
					"modify index is -modify-index (0: only if the key does not exist).",
				OnUsageError: onUsageError("cairn kv put"),
				Flags: agentFlags(
					&cli.Uint64Flag{Name: "flags", Usage: "the entry's flags, an opaque unsigned `N`"},
					&cli.BoolFlag{Name: "cas", Usage: "write only if the key's modify index is -modify-index"},
					&cli.Uint64Flag{Name: "modify-index", Usage: "with -cas, the modify `INDEX` the key must have"},
					&cli.BoolFlag{Name: "base64", Usage: "VALUE is base64-encoded; write it decoded"},
				),
				Action: kvPut,
			},
			{
				Name:      "delete",
				Usage:     "Delete a key, or every key under a prefix",
				UsageText: "cairn kv delete [-recurse] [-cas -modify-index N] KEY",
				Description: "Deleting a key that does not exist succeeds. With -cas the key is deleted only\n" +
					"if its modify index is -modify-index.",
				OnUsageError: onUsageError("cairn kv delete"),
				Flags: agentFlags(
					&cli.BoolFlag{Name: "recurse", Usage: "delete every key starting with KEY"},
					&cli.BoolFlag{Name: "cas", Usage: "delete only if the key's modify index is -modify-index"},
					&cli.Uint64Flag{Name: "modify-index", Usage: "with -cas, the modify `INDEX` the key must have"},
				),
				Action: kvDelete,
			},
			kvExportCommand(), // kv_export.go
			kvImportCommand(),
		},
	}
}

// kvKeyArg returns the KEY argument of cairn kv <cmd>; "" is allowed where
// a prefix is meant (allowEmpty), and then may be left out.
func kvKeyArg(c *cli.Context, cmd string, allowEmpty bool) (string, error) {
	switch {
	case c.NArg() > 1:
		return "", usagef("unexpected argument %q (see \"cairn kv %s -h\")", c.Args().Get(1), cmd)
	case c.NArg() == 0 && !allowEmpty:
		return "", usagef("want a KEY (see \"cairn kv %s -h\")", cmd)
	}
	key := c.Args().First()
	if key == "" && !allowEmpty {
		return "", usagef("KEY must not be empty (see \"cairn kv %s -h\")", cmd)
	}
	return strings.TrimPrefix(key, "/"), nil
}

func kvGet(c *cli.Context) error {
	recurse, keys := c.Bool("recurse"), c.Bool("keys")
	if recurse && keys {
		return usagef("-recurse and -keys cannot be combined (see \"cairn kv get -h\")")
	}
	key, err := kvKeyArg(c, "get", recurse || keys)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	q := &api.QueryOptions{AllowStale: c.Bool("stale")}
	kv := client.KV()
	switch {
	case keys:
		list, _, err := kv.Keys(c.Context, key, c.String("separator"), q)
		if err != nil {
			return fmt.Errorf("list keys under %q: %w", key, err)
		}
		for _, k := range list {
			if _, err := fmt.Fprintln(c.App.Writer, k); err != nil {
				return err
			}
		}
		return nil
	case recurse:
		pairs, _, err := kv.List(c.Context, key, q)
		if err != nil {
			return fmt.Errorf("list keys under %q: %w", key, err)
		}
		for i, p := range pairs {
			if c.Bool("detailed") {
				if i > 0 {
					fmt.Fprintln(c.App.Writer)
				}
				if err := writeKVDetailed(c, p); err != nil {
					return err
				}
				continue
			}
			if _, err := fmt.Fprintf(c.App.Writer, "%s:%s\n", p.Key, kvValue(c, p.Value)); err != nil {
				return err
			}
		}
		return nil
	}
	p, _, err := kv.Get(c.Context, key, q)
	if err != nil {
		return fmt.Errorf("get key %q: %w", key, err)
	}
	if p == nil {
		return fmt.Errorf("no key exists at %q", key)
	}
	if c.Bool("detailed") {
		return writeKVDetailed(c, p)
	}
	_, err = fmt.Fprintln(c.App.Writer, kvValue(c, p.Value))
	return err
}

func kvValue(c *cli.Context, v []byte) string {
	if c.Bool("base64") {
		return base64.StdEncoding.EncodeToString(v)
	}
	return string(v)
}

func writeKVDetailed(c *cli.Context, p *api.KVPair) error {
	return writeTable(c.App.Writer, [][]string{
		{"CreateIndex", strconv.FormatUint(p.CreateIndex, 10)},
		{"Flags", strconv.FormatUint(p.Flags, 10)},
		{"Key", p.Key},
		{"LockIndex", strconv.FormatUint(p.LockIndex, 10)},
		{"ModifyIndex", strconv.FormatUint(p.ModifyIndex, 10)},
		{"Session", orDash(p.Session)},
		{"Value", kvValue(c, p.Value)},
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func kvPut(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("want a KEY (see \"cairn kv put -h\")")
	}
	if c.NArg() > 2 {
		return usagef("unexpected argument %q (see \"cairn kv put -h\")", c.Args().Get(2))
	}
	key := strings.TrimPrefix(c.Args().First(), "/")
	if key == "" {
		return usagef("KEY must not be empty (see \"cairn kv put -h\")")
	}
	if c.IsSet("modify-index") && !c.Bool("cas") {
		return usagef("-modify-index is used only with -cas (see \"cairn kv put -h\")")
	}
	if c.Bool("cas") && !c.IsSet("modify-index") {
		return usagef("-cas needs -modify-index (see \"cairn kv put -h\")")
	}
	value, err := kvPutValue(c)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	p := &api.KVPair{Key: key, Value: value, Flags: c.Uint64("flags"), ModifyIndex: c.Uint64("modify-index")}
	if c.Bool("cas") {
		ok, err := client.KV().CAS(c.Context, p, nil)
		if err != nil {
			return fmt.Errorf("write key %q: %w", key, err)
		}
		if !ok {
			return fmt.Errorf("did not write key %q: its modify index is not %d (-modify-index)", key, p.ModifyIndex)
		}
	} else if err := client.KV().Put(c.Context, p, nil); err != nil {
		return fmt.Errorf("write key %q: %w", key, err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "Wrote key %q\n", key)
	return err
}

// kvPutValue reads the VALUE argument: as it is, "-" from stdin, "@FILE"
// from a file; decoded from base64 with -base64.
func kvPutValue(c *cli.Context) ([]byte, error) {
	arg := c.Args().Get(1)
	var v []byte
	switch {
	case arg == "-":
		in := c.App.Reader
		if in == nil {
			in = os.Stdin
		}
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, fmt.Errorf("read VALUE from stdin: %w", err)
		}
		v = b
	case strings.HasPrefix(arg, "@"):
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("read VALUE: %w", err)
		}
		v = b
	default:
		v = []byte(arg)
	}
	if c.Bool("base64") {
		d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(v)))
		if err != nil {
			return nil, usagef("VALUE is not base64 (-base64): %v", err)
		}
		v = d
	}
	return v, nil
}

func kvDelete(c *cli.Context) error {
	recurse := c.Bool("recurse")
	key, err := kvKeyArg(c, "delete", recurse)
	if err != nil {
		return err
	}
	if recurse && c.Bool("cas") {
		return usagef("-recurse and -cas cannot be combined (see \"cairn kv delete -h\")")
	}
	if c.IsSet("modify-index") && !c.Bool("cas") {
		return usagef("-modify-index is used only with -cas (see \"cairn kv delete -h\")")
	}
	if c.Bool("cas") && !c.IsSet("modify-index") {
		return usagef("-cas needs -modify-index (see \"cairn kv delete -h\")")
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	kv := client.KV()
	switch {
	case recurse:
		if err := kv.DeleteTree(c.Context, key, nil); err != nil {
			return fmt.Errorf("delete keys under %q: %w", key, err)
		}
		_, err = fmt.Fprintf(c.App.Writer, "Deleted keys under %q\n", key)
		return err
	case c.Bool("cas"):
		idx := c.Uint64("modify-index")
		ok, err := kv.DeleteCAS(c.Context, &api.KVPair{Key: key, ModifyIndex: idx}, nil)
		if err != nil {
			return fmt.Errorf("delete key %q: %w", key, err)
		}
		if !ok {
			return fmt.Errorf("did not delete key %q: its modify index is not %d (-modify-index)", key, idx)
		}
	default:
		if err := kv.Delete(c.Context, key, nil); err != nil {
			return fmt.Errorf("delete key %q: %w", key, err)
		}
	}
	_, err = fmt.Fprintf(c.App.Writer, "Deleted key %q\n", key)
	return err
}
