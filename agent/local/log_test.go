package local_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndns/cairn/agent/checks"
	"github.com/cairndns/cairn/agent/local"
)

// lockedBuffer is a bytes.Buffer the state's goroutines may log to while
// the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns what was written since the last take.
func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// TestChangesAreLoggedAtInfo checks that every change an operator makes to
// the agent's services, checks and maintenance mode is one line at info,
// with its fields: "consul monitor" shows them, as it shows Consul's.
func TestChangesAreLoggedAtInfo(t *testing.T) {
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := local.New(testConfig(t.TempDir()), newFakeCatalog(t), logger)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(st.Close)
	ctx := context.Background()
	for _, tc := range []struct {
		change string
		do     func() error
		want   string // the line's message and fields, after its time and level
	}{
		{"register web", func() error {
			return st.AddService(ctx, svc("web1", "web", 80), []*checks.Definition{ttl("web-ttl", time.Minute)})
		}, `msg="service registered" component=local service=web1 name=web checks=1`},
		{"register a node check", func() error { return st.AddCheck(ctx, ttl("mem", time.Minute)) },
			`msg="check registered" component=local check=mem service=""`},
		{"deregister the node check", func() error { return st.RemoveCheck(ctx, "mem") },
			`msg="check deregistered" component=local check=mem service=""`},
		{"web into maintenance", func() error { return st.SetServiceMaintenance(ctx, "web1", true, "deploy") },
			`msg="service entered maintenance mode" component=local service=web1 reason=deploy`},
		{"web out of maintenance", func() error { return st.SetServiceMaintenance(ctx, "web1", false, "") },
			`msg="service left maintenance mode" component=local service=web1`},
		{"node into maintenance", func() error { return st.SetNodeMaintenance(ctx, true, "") },
			`msg="node entered maintenance mode" component=local reason="Maintenance mode is enabled; no reason was given"`},
		{"node out of maintenance", func() error { return st.SetNodeMaintenance(ctx, false, "") },
			`msg="node left maintenance mode" component=local`},
		{"deregister web", func() error { return st.RemoveService(ctx, "web1") },
			`msg="service deregistered" component=local service=web1`},
	} {
		if err := tc.do(); err != nil {
			t.Fatalf("%s: %v", tc.change, err)
		}
		got := logs.take()
		var lines []string
		for line := range strings.Lines(got) {
			if _, rest, ok := strings.Cut(strings.TrimSpace(line), " level=INFO "); ok {
				lines = append(lines, rest)
			}
		}
		if len(lines) != 1 || lines[0] != tc.want {
			t.Errorf("%s: logged at info %q, want the one line %q", tc.change, lines, tc.want)
		}
	}
}
