package rpc

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestClockSkewNeitherBreaksCallsNorGoesUnseen: a caller 5s behind a
// server 5s ahead (10s apart) has its calls served, with deadlines, as
// if the clocks agreed; the pool measures the server's clock as 10s ahead
// (cairn_rpc_clock_skew_seconds) and warns about it.
func TestClockSkewNeitherBreaksCallsNorGoesUnseen(t *testing.T) {
	scfg := testConfig()
	scfg.ClockOffset = 5 * time.Second
	s, _ := startServer(t, scfg)
	var logs lockedBuffer
	pcfg := DefaultPoolConfig()
	pcfg.ClockOffset = -5 * time.Second
	p, err := NewPool(pcfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	addr := s.Addr().String()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := p.Call(ctx, addr, "Echo.Echo", &EchoArgs{Payload: Payload{Name: "hi"}}, &EchoReply{})
		cancel()
		if err != nil {
			t.Fatalf("call with 2s left from a caller 10s behind the server: %v", err)
		}
	}
	if got := testutil.ToFloat64(p.skew.gauge.WithLabelValues(addr)); got < 9.5 || got > 10.5 {
		t.Errorf("cairn_rpc_clock_skew_seconds{server=%q}: got %v, want about 10", addr, got)
	}
	if got, ok := p.ClockSkew(addr); !ok || got < 9500*time.Millisecond || got > 10500*time.Millisecond {
		t.Errorf("ClockSkew(%q): got %v, %t, want about 10s, true", addr, got, ok)
	}
	if got, ok := p.ClockSkew("127.0.0.66:1"); ok {
		t.Errorf("ClockSkew of a server never called: got %v, true, want false", got)
	}
	if !strings.Contains(logs.String(), "clock is off") {
		t.Errorf("no warning about the skew; logs:\n%s", logs.String())
	}
}
