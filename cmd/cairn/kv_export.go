package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/urfave/cli/v2"
)

// kvExportEntry is one key of cairn kv export's output, in Consul's
// format, so that exports move between cairn and Consul both ways.
type kvExportEntry struct {
	Key   string `json:"key"`
	Flags uint64 `json:"flags"`
	Value []byte `json:"value"` // base64 in JSON
}

func kvExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "Print the keys under a prefix as JSON, for cairn kv import",
		UsageText: "cairn kv export [PREFIX]",
		Description: "Prints a JSON array of {\"key\", \"flags\", \"value\" (base64)}, Consul's export\n" +
			"format, of every key starting with PREFIX (all keys without one).",
		OnUsageError: onUsageError("cairn kv export"),
		Flags:        agentFlags(&cli.BoolFlag{Name: "stale", Usage: "let any server answer, possibly a little behind the leader"}),
		Action:       kvExport,
	}
}

func kvImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "Write the keys of a cairn kv export",
		UsageText: "cairn kv import [-prefix PREFIX] [DATA|-|@FILE]",
		Description: "Reads an export (Consul's format too): inline DATA, - (or nothing) for\n" +
			"stdin, @FILE for a file. Every key is written as it is, with -prefix\n" +
			"put in front of it; the keys already there and not in the data are left\n" +
			"alone. Nothing is written when the data does not parse.",
		OnUsageError: onUsageError("cairn kv import"),
		Flags:        agentFlags(&cli.StringFlag{Name: "prefix", Usage: "put `PREFIX` in front of every key imported"}),
		Action:       kvImport,
	}
}

func kvExport(c *cli.Context) error {
	prefix, err := kvKeyArg(c, "export", true)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	pairs, _, err := client.KV().List(c.Context, prefix, &api.QueryOptions{AllowStale: c.Bool("stale")})
	if err != nil {
		return fmt.Errorf("list keys under %q: %w", prefix, err)
	}
	out := make([]kvExportEntry, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, kvExportEntry{Key: p.Key, Flags: p.Flags, Value: p.Value})
	}
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "\t")
	return enc.Encode(out)
}

func kvImport(c *cli.Context) error {
	if c.NArg() > 1 {
		return usagef("unexpected argument %q (see \"cairn kv import -h\")", c.Args().Get(1))
	}
	data, err := kvImportData(c, c.Args().First())
	if err != nil {
		return err
	}
	var entries []kvExportEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return fmt.Errorf("DATA is not a cairn kv export (a JSON array of {\"key\", \"flags\", \"value\"}): %w", err)
	}
	prefix := c.String("prefix")
	for i, e := range entries {
		if strings.TrimPrefix(prefix+e.Key, "/") == "" {
			return fmt.Errorf("entry %d of DATA has an empty key", i)
		}
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	for _, e := range entries {
		key := strings.TrimPrefix(prefix+e.Key, "/")
		if err := client.KV().Put(c.Context, &api.KVPair{Key: key, Flags: e.Flags, Value: e.Value}, nil); err != nil {
			return fmt.Errorf("write key %q: %w", key, err)
		}
	}
	_, err = fmt.Fprintf(c.App.Writer, "Imported %d keys\n", len(entries))
	return err
}

// kvImportData is the export cairn kv import reads: arg inline, from a
// file (@FILE), or from stdin ("-" or nothing).
func kvImportData(c *cli.Context, arg string) ([]byte, error) {
	switch {
	case arg == "" || arg == "-":
		in := c.App.Reader
		if in == nil {
			in = os.Stdin
		}
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, fmt.Errorf("read DATA from stdin: %w", err)
		}
		return b, nil
	case strings.HasPrefix(arg, "@"):
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("read DATA: %w", err)
		}
		return b, nil
	}
	return []byte(arg), nil
}
