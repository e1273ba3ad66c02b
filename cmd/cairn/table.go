package main

import (
	"bytes"
	"io"
	"strings"
	"text/tabwriter"
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
