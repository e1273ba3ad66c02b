package gossip_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/cairndns/cairn/gossip"
	"github.com/cairndns/cairn/gossip/gossiptest"
)

// lockedBuffer collects log lines written from memberlist's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLogged starts a pool whose log lines (WARN and up) go to the
// returned buffer.
func startLogged(t *testing.T, cfg gossip.Config) (*gossip.Pool, *lockedBuffer) {
	t.Helper()
	var buf lockedBuffer
	p, err := gossip.New(cfg, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })
	return p, &buf
}

// playProtocol makes cfg a build that speaks protocol v and accepts lo–hi.
func playProtocol(cfg *gossip.Config, build string, v, lo, hi uint8) {
	cfg.Build, cfg.ProtocolVersion, cfg.ProtocolMin, cfg.ProtocolMax = build, v, lo, hi
}

// TestIncompatiblePeerIsRefusedLoudly: a peer whose protocol range does
// not overlap the pool's cannot join; the pool logs it at ERROR naming
// both builds and protocols, counts it and lists it as incompatible, but
// never as a member. A peer of the next protocol that still accepts this
// one (the contract: N accepts N-1) joins.
func TestIncompatiblePeerIsRefusedLoudly(t *testing.T) {
	t.Parallel()
	ca := gossiptest.LANConfig("a", "dc1", gossip.RoleServer)
	ca.Build = "0.2.0:aaaaaaaa"
	a, logs := startLogged(t, ca)

	cf := gossiptest.LANConfig("future", "dc1", gossip.RoleClient)
	playProtocol(&cf, "9.0.0:ffffffff", gossip.ProtocolVersionMax+2, gossip.ProtocolVersionMax+2, gossip.ProtocolVersionMax+2)
	future, futureLogs := startLogged(t, cf)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := future.Join(ctx, []string{gossiptest.Addr(a)}); !errors.Is(err, gossip.ErrIncompatiblePeer) && (err == nil || !strings.Contains(err.Error(), "incompatible")) {
		t.Errorf("join of a peer of protocol %d: got %v, want it refused as incompatible", cf.ProtocolVersion, err)
	}
	gossiptest.WaitFor(t, wait, func() error {
		inc := a.Incompatible()
		if len(inc) != 1 || inc[0].Name != "future" || inc[0].Status != gossip.StatusIncompatible || inc[0].Build != cf.Build ||
			inc[0].ProtocolVersion != cf.ProtocolVersion || !strings.Contains(inc[0].Refused, "protocol") {
			return fmt.Errorf("incompatible peers: got %+v, want future, status incompatible, with its build and protocol", inc)
		}
		return nil
	})
	for _, m := range a.Members() {
		if m.Name == "future" {
			t.Errorf("the refused peer is a member: %+v", m)
		}
	}
	if n := a.IncompatibleRefusals(); n == 0 {
		t.Error("refusals: got 0, want them counted")
	}
	line := ""
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "incompatible protocol") {
			line = l
		}
	}
	want := []string{"peer=future", "peer_build=9.0.0:ffffffff", fmt.Sprintf("peer_protocol=%d", cf.ProtocolVersion),
		"build=0.2.0:aaaaaaaa", fmt.Sprintf("protocol=%d", ca.ProtocolVersion),
		fmt.Sprintf("protocol_min=%d", ca.ProtocolMin), fmt.Sprintf("protocol_max=%d", ca.ProtocolMax)}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("ERROR line about the refused peer: got %q, want it to hold %s (logs:\n%s)", line, w, logs)
		}
	}
	// The refused side says so as loudly: it refused a too.
	gossiptest.WaitFor(t, wait, func() error {
		if !strings.Contains(futureLogs.String(), "level=ERROR") || len(future.Incompatible()) != 1 {
			return fmt.Errorf("the newer peer: got logs %q and incompatible %+v, want a refused at ERROR", futureLogs, future.Incompatible())
		}
		return nil
	})

	// The next protocol, still accepting this one, is a member.
	cn := gossiptest.LANConfig("next", "dc1", gossip.RoleClient)
	playProtocol(&cn, "0.3.0:bbbbbbbb", gossip.ProtocolVersionMax+1, gossip.ProtocolVersionMax, gossip.ProtocolVersionMax+1)
	next := gossiptest.Start(t, cn)
	gossiptest.Join(t, next, a)
	gossiptest.WaitStatus(t, wait, "next", gossip.StatusAlive, a)
	gossiptest.WaitStatus(t, wait, "a", gossip.StatusAlive, next)
	if inc := a.Incompatible(); len(inc) != 1 {
		t.Errorf("incompatible peers after a compatible join: got %+v, want future only", inc)
	}
}
