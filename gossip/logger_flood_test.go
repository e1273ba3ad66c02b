package gossip_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// lines is a slog.Handler that keeps the message of every record at Info
// or above.
type lines struct {
	mu   sync.Mutex
	msgs []string
}

func (l *lines) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

// matching returns the kept messages containing s.
func (l *lines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.msgs {
		if strings.Contains(m, s) {
			out = append(out, m)
		}
	}
	return out
}

// flood sends n packets of garbage from one UDP socket to p's gossip
// port, in batches the socket's buffer holds: after each, it waits until
// the pool has logged, or left out, a line for at least share of the
// packets sent so far (some garbage makes no line).
func flood(t *testing.T, p *gossip.Pool, log *lines, n int, share float64, garbage func(*rand.Rand) []byte) {
	t.Helper()
	conn, err := net.Dial("udp", gossiptest.Addr(p))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 500
	for sent := 0; sent < n; {
		for range batch {
			if _, err := conn.Write(garbage(rng)); err != nil {
				t.Fatal(err)
			}
		}
		sent += batch
		gossiptest.WaitFor(t, wait, func() error {
			handled := p.DroppedLogLines() + uint64(len(log.matching("from=")))
			if want := uint64(share * float64(sent)); handled < want {
				return fmt.Errorf("%d packets sent, %d lines about them logged or left out, want %d", sent, handled, want)
			}
			return nil
		})
	}
}

// TestGarbageFloodLogsBounded: 50,000 packets of garbage from one address
// make a handful of log lines, not one each, and the pool counts the rest.
func TestGarbageFloodLogsBounded(t *testing.T) {
	t.Parallel()
	random := func(rng *rand.Rand) []byte {
		b := make([]byte, 20+rng.IntN(100))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, tc := range []struct {
		name     string
		key      []byte
		share    float64 // of the packets that make a line
		maxLines int
	}{
		// Nothing decrypts: one line for every packet, of a few kinds
		// (a bad label header, no key, a bad version).
		{"encrypted", gossiptest.RawKey(t), 0.9, 6},
		// Random first bytes name every message type memberlist has,
		// each failing in its own way (or not at all): one line per
		// kind.
		{"clear text", nil, 0.5, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := gossiptest.LANConfig("target", "dc1", gossip.RoleServer)
			cfg.EncryptKey = tc.key
			log := &lines{}
			p, err := gossip.New(cfg, slog.New(log))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Shutdown() })

			const packets = 50_000
			flood(t, p, log, packets, tc.share, random)
			got := log.matching("from=127.0.0.1")
			if len(got) == 0 || len(got) > tc.maxLines {
				t.Errorf("%d packets of garbage made %d log lines, want 1 to %d:\n%s",
					packets, len(got), tc.maxLines, strings.Join(got, "\n"))
			}
			t.Logf("%d lines logged, %d left out", len(got), p.DroppedLogLines())
		})
	}
}
