package loopback

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Table collects a bench's summary: one row per figure, with its target
// ("" when it has none), printed as it is added and again at the end.
type Table struct{ rows [][3]string }

// Add records a figure and prints it.
func (t *Table) Add(what, value, target string) {
	t.rows = append(t.rows, [3]string{what, value, target})
	fmt.Printf("  %s: %s\n", what, value)
}

// Print writes every figure as a table.
func (t *Table) Print(w io.Writer) {
	fmt.Fprintf(w, "\n%-52s %-34s %s\n", "figure", "value", "target")
	for _, r := range t.rows {
		fmt.Fprintf(w, "%-52s %-34s %s\n", r[0], r[1], r[2])
	}
}

// LoadAverage is the machine's load averages, to read the figures by.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return "load average " + strings.Join(f[:min(3, len(f))], " ")
}

// WaitLeader waits until every server in servers names the same leader,
// other than not (a server's name, or ""), and returns it.
func (c *Cluster) WaitLeader(ctx context.Context, servers []*Agent, not string) (*Agent, error) {
	var name string
	err := c.Poll(ctx, 20*time.Millisecond, "one leader named by every server", func(ctx context.Context) (bool, error) {
		name = ""
		for _, s := range servers {
			l := c.Leader(ctx, s)
			if l == "" || l == not || (name != "" && l != name) {
				return false, nil
			}
			name = l
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return c.Agent(name), nil
}
