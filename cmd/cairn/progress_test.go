package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &progress{w: &out, label: "Sent", total: 4 << 20, now: func() time.Time { return now }}
	p.start = now
	now = now.Add(2 * time.Second)
	p.add(1 << 20) // shown: the first report
	if want := "Sent 1.0 MiB of 4.0 MiB (25%), 512.0 KiB/s"; p.status != want {
		t.Errorf("got %q, want %q", p.status, want)
	}
	now = now.Add(100 * time.Millisecond)
	p.add(1 << 20) // not shown: too soon after the last
	if lines := strings.Count(out.String(), "\r"); lines != 1 {
		t.Errorf("reports after two adds 100ms apart: got %d, want 1", lines)
	}
	p.done()
	if !strings.HasSuffix(out.String(), "Sent 2.0 MiB of 4.0 MiB (50%), 975.2 KiB/s\x1b[K\n") {
		t.Errorf("final report: got %q", out.String())
	}

	// Not a terminal: nothing shown, still counted.
	var buf bytes.Buffer
	q := newProgress(&buf, "Saved", 0)
	q.add(10)
	q.done()
	if buf.Len() != 0 || q.n != 10 {
		t.Errorf("to a buffer: got %q and %d bytes counted, want nothing shown and 10", buf.String(), q.n)
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 30: "5.0 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d): got %q, want %q", n, got, want)
		}
	}
}
