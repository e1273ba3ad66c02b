package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

// writeTable writes rows as aligned columns separated by two spaces, with
// no trailing blanks where the last cells are empty.
func writeTable(w io.Writer, rows [][]string) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	for _, row := range rows {
		io.WriteString(tw, strings.Join(row, "\t")+"\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// The values of -format.
const (
	formatTable = "table"
	formatJSON  = "json"
)

// formatFlag is the -format flag of the commands that list things.
func formatFlag() cli.Flag {
	return &cli.StringFlag{Name: "format", Usage: "output `FORMAT`: table or json", Value: formatTable}
}

// outputFormat reads -format of the command at path, rejecting anything
// but table and json.
func outputFormat(c *cli.Context, path string) (string, error) {
	switch f := c.String("format"); f {
	case formatTable, formatJSON:
		return f, nil
	default:
		return "", usagef("-format %q: want table or json (see \"%s -h\")", f, path)
	}
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
