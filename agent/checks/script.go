package checks

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cairndns/cairn/catalog"
)

// scriptWaitDelay bounds how long a run waits for the program's output
// pipes to close once the program has exited or been killed. A program
// that leaves a child behind holding stdout would otherwise hold the check
// (and Remove) until that child exits.
const scriptWaitDelay = 500 * time.Millisecond

// scriptProbe runs a program (no shell: Args[0] with Args[1:]): exit 0
// passing, 1 warning, anything else critical. Its stdout and stderr,
// interleaved, are the output. At the Timeout the program and its whole
// process group are killed and the run is critical.
type scriptProbe struct {
	args    []string
	timeout time.Duration
	limit   int // OutputMaxSize
}

func (p *scriptProbe) probe(ctx context.Context) result {
	cmd := exec.CommandContext(ctx, p.args[0], p.args[1:]...)
	out := &tailBuffer{limit: p.limit}
	cmd.Stdout, cmd.Stderr = out, out // one writer: exec serializes writes
	cmd.WaitDelay = scriptWaitDelay
	killProcessGroup(cmd)
	err := cmd.Run()
	output := out.String()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		msg := fmt.Sprintf("timed out after %s running %s", p.timeout, p.args[0])
		if output != "" {
			msg += "\n" + output
		}
		return result{catalog.HealthCritical, msg}
	}
	var exit *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: exited 0, but something it started kept the
		// output open; the program's verdict stands.
		return result{catalog.HealthPassing, output}
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return result{catalog.HealthWarning, output}
	case output == "":
		return result{catalog.HealthCritical, err.Error()} // "exit status 2", "executable file not found"
	}
	return result{catalog.HealthCritical, output}
}

// tailBuffer keeps the last limit bytes written to it, like Consul's: the
// end of a program's output is where it says why it failed.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept output, saying how much was dropped if any.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total <= int64(b.limit) {
		return string(b.buf)
	}
	tail := b.buf
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:] // start on a rune boundary
	}
	return fmt.Sprintf("Captured %d of %d bytes\n...\n%s", len(tail), b.total, tail)
}
