package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows, on a terminal, how many bytes a long transfer (a
// snapshot save or restore) has moved and at what rate, on one line it
// rewrites at most every progressEvery; its last report ends the line.
// Written anywhere else (a file, a pipe, a test's buffer) it shows
// nothing, so scripts see only the command's result.
type progress struct {
	w      io.Writer // nil: off
	label  string
	total  int64 // 0 when unknown
	n      int64
	start  time.Time
	shown  time.Time
	now    func() time.Time
	status string // the last line shown, for a test
}

const progressEvery = 250 * time.Millisecond

// newProgress returns a progress for w, off unless w is a terminal.
func newProgress(w io.Writer, label string, total int64) *progress {
	p := &progress{label: label, total: total, now: time.Now}
	if isTerminal(w) {
		p.w = w
	}
	p.start = p.now()
	return p
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// add counts n more bytes and shows them if the last report is old.
func (p *progress) add(n int) {
	p.n += int64(n)
	if p.w == nil {
		return
	}
	if now := p.now(); now.Sub(p.shown) >= progressEvery {
		p.shown = now
		p.show("\r")
	}
}

// done shows the final count and ends the line.
func (p *progress) done() {
	if p.w != nil {
		p.show("\r")
		fmt.Fprintln(p.w)
	}
}

func (p *progress) show(prefix string) {
	elapsed := p.now().Sub(p.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(p.n) / elapsed
	}
	p.status = fmt.Sprintf("%s %s", p.label, formatBytes(p.n))
	if p.total > 0 {
		p.status += fmt.Sprintf(" of %s (%d%%)", formatBytes(p.total), p.n*100/p.total)
	}
	p.status += fmt.Sprintf(", %s/s", formatBytes(int64(rate)))
	fmt.Fprintf(p.w, "%s%s\033[K", prefix, p.status)
}

// formatBytes writes n in the largest binary unit that keeps it at least 1.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// progressReader counts what is read through it.
type progressReader struct {
	r io.Reader
	p *progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.add(n)
	return n, err
}

// progressWriter counts what is written through it.
type progressWriter struct {
	w io.Writer
	p *progress
}

func (w progressWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.p.add(n)
	return n, err
}
