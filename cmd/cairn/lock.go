package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/catalog"
	"github.com/urfave/cli/v2"
)

// Timing of "cairn lock" that has no flag.
const (
	// lockMonitorRetryTime is the pause between reads of the held lock
	// after one failed (Consul's "consul lock" uses 1s too): with the
	// default -monitor-retries 3, a holder whose agent died stops its
	// child about 3s later, well within the 15s lock-delay.
	lockMonitorRetryTime = time.Second
	// lockRetryTime is the pause before trying again a lock refused within
	// a lock-delay.
	lockRetryTime = time.Second
	// childKillGrace is how long the child has to exit after SIGTERM
	// before it is sent SIGKILL.
	childKillGrace = 5 * time.Second
	// lockCleanupTimeout bounds the release, session destroy and key
	// clean-up after the child is done.
	lockCleanupTimeout = 10 * time.Second
)

// The environment variables set for the child: Consul's, and cairn's own.
const (
	consulLockHeldEnv = "CONSUL_LOCK_HELD"
	cairnLockHeldEnv  = "CAIRN_LOCK_HELD"
)

func lockCommand() *cli.Command {
	return &cli.Command{
		Name:      "lock",
		Usage:     "Run a command while holding a lock (or one of -n slots of a semaphore) in the key/value store",
		UsageText: "cairn lock [options] PREFIX CHILD [ARG...]",
		Description: "Waits until it holds the lock PREFIX/.lock (with -n N > 1: one of N slots of\n" +
			"the semaphore under PREFIX), then runs CHILD with CONSUL_LOCK_HELD=true and\n" +
			"CAIRN_LOCK_HELD=true in its environment, and releases when CHILD exits. The\n" +
			"lock is held by a session on the agent's node: if the node fails, the session\n" +
			"ends and another contender may take the lock once the lock-delay has passed.\n" +
			"When the lock is lost (its session ended, or reading it failed more than\n" +
			"-monitor-retries times in a row, 1s apart), CHILD is sent SIGTERM, then SIGKILL\n" +
			"5s later, and cairn lock exits 1. SIGINT or SIGTERM stops CHILD the same way,\n" +
			"releases the lock and destroys the session. Keys and flags are Consul's, so\n" +
			"\"consul lock\" and cairn lock exclude each other on one prefix. All contenders\n" +
			"of a prefix must give the same -n. Flags must come before PREFIX.",
		ArgsUsage:    "PREFIX CHILD [ARG...]",
		OnUsageError: onUsageError("cairn lock"),
		Flags: agentFlags(
			&cli.IntFlag{Name: "n", Value: 1, Usage: "how many may hold the lock at once: `N` > 1 makes it a semaphore"},
			&cli.StringFlag{Name: "name", Usage: "`NAME` of the session", DefaultText: `"cairn lock for CHILD at PREFIX"`},
			&cli.BoolFlag{Name: "shell", Value: true, Usage: "run CHILD ARG... with sh -c (-shell=false: run CHILD itself with ARG...)"},
			&cli.DurationFlag{Name: "timeout", Usage: "give up if the lock is not acquired within `DURATION`", DefaultText: "wait forever"},
			&cli.IntFlag{Name: "monitor-retries", Value: 3, Usage: "failed reads of the held lock in a row, 1s apart, tolerated before it counts as lost (`N`)"},
			&cli.DurationFlag{Name: "lock-delay", Usage: "`DURATION` others must wait after this holder's session ends without releasing (at most 60s)", DefaultText: "the servers' default, 15s"},
			&cli.BoolFlag{Name: "child-exit-code", Usage: "exit with CHILD's exit code when it fails (otherwise 0 once it ran)"},
			&cli.BoolFlag{Name: "pass-stdin", Usage: "give CHILD this command's stdin (otherwise it reads none)"},
			&cli.BoolFlag{Name: "verbose", Usage: "report each step on stderr"},
		),
		Action: lockAction,
	}
}

// lockConfig is what the flags and arguments of "cairn lock" say.
type lockConfig struct {
	prefix         string
	child          []string
	limit          int
	name           string
	shell          bool
	timeout        time.Duration
	monitorRetries int
	lockDelay      time.Duration
	childExitCode  bool
	passStdin      bool
	verbose        bool
}

// parseLockArgs checks the flags and arguments; each error is a usage
// error naming the flag or argument at fault.
func parseLockArgs(c *cli.Context) (lockConfig, error) {
	lc := lockConfig{
		limit: c.Int("n"), name: c.String("name"), shell: c.Bool("shell"), timeout: c.Duration("timeout"),
		monitorRetries: c.Int("monitor-retries"), lockDelay: c.Duration("lock-delay"),
		childExitCode: c.Bool("child-exit-code"), passStdin: c.Bool("pass-stdin"), verbose: c.Bool("verbose"),
	}
	args := c.Args().Slice()
	if len(args) < 2 {
		return lc, usagef(`want PREFIX and CHILD, got %d argument(s) (see "cairn lock -h")`, len(args))
	}
	lc.prefix = strings.Trim(args[0], "/")
	if lc.prefix == "" {
		return lc, usagef("PREFIX %q: must name a key prefix, not be empty or only slashes", args[0])
	}
	lc.child = args[1:]
	if strings.TrimSpace(lc.child[0]) == "" {
		return lc, usagef(`CHILD is empty (see "cairn lock -h")`)
	}
	switch {
	case lc.limit < 1:
		return lc, usagef("-n %d: must be at least 1", lc.limit)
	case lc.timeout < 0:
		return lc, usagef("-timeout %s: must not be negative", lc.timeout)
	case lc.monitorRetries < 0:
		return lc, usagef("-monitor-retries %d: must not be negative", lc.monitorRetries)
	case lc.lockDelay < 0 || lc.lockDelay > catalog.MaxLockDelay:
		return lc, usagef("-lock-delay %s: must be between 0s and %s", lc.lockDelay, catalog.MaxLockDelay)
	case c.IsSet("lock-delay") && lc.limit > 1:
		return lc, usagef("-lock-delay applies to a lock (-n 1), not to a semaphore: its slots are freed at once")
	}
	if lc.name == "" {
		lc.name = fmt.Sprintf("cairn lock for %s at %s", strings.Join(lc.child, " "), lc.prefix)
	}
	return lc, nil
}

// holder is a Lock or a Semaphore, as "cairn lock" uses them.
type holder interface {
	acquire(ctx context.Context) (<-chan struct{}, error)
	release(ctx context.Context) error
	cleanup(ctx context.Context) error
}

type lockHolder struct{ *api.Lock }

func (h lockHolder) acquire(ctx context.Context) (<-chan struct{}, error) { return h.Lock.Lock(ctx) }
func (h lockHolder) release(ctx context.Context) error                    { return h.Unlock(ctx) }

// cleanup deletes the lock key unless another contender holds it.
func (h lockHolder) cleanup(ctx context.Context) error {
	if err := h.Destroy(ctx); err != nil && !errors.Is(err, api.ErrLockInUse) {
		return err
	}
	return nil
}

type semaphoreHolder struct{ *api.Semaphore }

func (h semaphoreHolder) acquire(ctx context.Context) (<-chan struct{}, error) { return h.Acquire(ctx) }
func (h semaphoreHolder) release(ctx context.Context) error                    { return h.Release(ctx) }

// cleanup deletes the lock key unless slots are held.
func (h semaphoreHolder) cleanup(ctx context.Context) error {
	if err := h.Destroy(ctx); err != nil && !errors.Is(err, api.ErrSemaphoreInUse) {
		return err
	}
	return nil
}

// newHolder makes the lock (-n 1, on PREFIX/.lock) or the semaphore.
func newHolder(client *api.Client, lc lockConfig, logger *slog.Logger) (holder, error) {
	if lc.limit == 1 {
		l, err := client.LockOpts(&api.LockOptions{
			Key: lc.prefix + "/" + api.DefaultSemaphoreKey, SessionName: lc.name, LockDelay: lc.lockDelay,
			MonitorRetries: lc.monitorRetries, MonitorRetryTime: lockMonitorRetryTime, LockRetryTime: lockRetryTime, Logger: logger,
		})
		return lockHolder{l}, err
	}
	s, err := client.SemaphoreOpts(&api.SemaphoreOptions{
		Prefix: lc.prefix, Limit: lc.limit, SessionName: lc.name,
		MonitorRetries: lc.monitorRetries, MonitorRetryTime: lockMonitorRetryTime, Logger: logger,
	})
	return semaphoreHolder{s}, err
}

// childExitError is the error of "cairn lock -child-exit-code" when the
// child failed: run exits with code.
type childExitError struct{ code int }

func (e *childExitError) Error() string { return fmt.Sprintf("the child exited with code %d", e.code) }

// ExitCode is the process exit code run returns for the error.
func (e *childExitError) ExitCode() int { return e.code }

func lockAction(c *cli.Context) error {
	lc, err := parseLockArgs(c)
	if err != nil {
		return err
	}
	client, err := newClient(c)
	if err != nil {
		return err
	}
	level := slog.LevelError
	if lc.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})).With("prefix", lc.prefix)
	h, err := newHolder(client, lc, logger)
	if err != nil {
		return err
	}

	// SIGINT and SIGTERM end ctx: waiting stops, or the child is stopped.
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()

	what := fmt.Sprintf("the lock on %s", lc.prefix)
	if lc.limit > 1 {
		what = fmt.Sprintf("a slot of the %d-holder semaphore on %s", lc.limit, lc.prefix)
	}
	logger.Info("waiting for " + what)
	acquireCtx, cancel := ctx, context.CancelFunc(func() {})
	if lc.timeout > 0 {
		acquireCtx, cancel = context.WithTimeout(ctx, lc.timeout)
	}
	lost, err := h.acquire(acquireCtx)
	timedOut := errors.Is(acquireCtx.Err(), context.DeadlineExceeded)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted before %s was acquired", what)
	case err != nil && timedOut:
		return fmt.Errorf("-timeout %s: %s was not acquired in time", lc.timeout, what)
	case err != nil:
		return fmt.Errorf("acquire %s: %w", what, err)
	}
	logger.Info("acquired " + what + "; starting the child")

	childErr, runErr := runLocked(ctx, c, lc, lost, logger)

	// Release with a context of its own: ctx may be over (a signal), and
	// the agent may be gone (a lost lock), which must not hang the exit.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), lockCleanupTimeout)
	defer ccancel()
	relErr := h.release(cctx)
	if relErr == nil {
		relErr = h.cleanup(cctx)
	}
	logger.Info("released "+what, "err", relErr)
	if runErr != nil {
		// The lock was lost, or a signal came: say so, whatever the
		// release did (an unreachable agent fails it too).
		return runErr
	}
	if relErr != nil {
		return fmt.Errorf("release %s: %w", what, relErr)
	}
	if childErr != nil && lc.childExitCode {
		if ee, ok := errors.AsType[*exec.ExitError](childErr); ok && ee.ExitCode() > 0 {
			return &childExitError{code: ee.ExitCode()}
		}
		return fmt.Errorf("the child failed: %w", childErr)
	}
	return nil
}

// runLocked runs the child while the lock is held and returns the child's
// own error (nil when it exited 0) and runErr, set when the child was
// stopped: the lock was lost, or ctx ended (a signal), or it could not
// start.
func runLocked(ctx context.Context, c *cli.Context, lc lockConfig, lost <-chan struct{}, logger *slog.Logger) (childErr, runErr error) {
	var cmd *exec.Cmd
	if lc.shell {
		cmd = exec.Command("/bin/sh", "-c", strings.Join(lc.child, " "))
	} else {
		cmd = exec.Command(lc.child[0], lc.child[1:]...)
	}
	cmd.Env = append(os.Environ(), consulLockHeldEnv+"=true", cairnLockHeldEnv+"=true")
	cmd.Stdout, cmd.Stderr = c.App.Writer, c.App.ErrWriter
	if lc.passStdin {
		cmd.Stdin = c.App.Reader
	}
	// A group of its own: stopping it reaches what a shell started, and
	// a Ctrl-C at the terminal reaches only cairn lock, which stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the child %q: %w", lc.child[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var why error
	select {
	case err := <-exited:
		logger.Info("the child exited", "err", err)
		return err, nil
	case <-lost:
		why = errors.New("lost the lock: its session ended or the agent could not be reached; the child was stopped")
	case <-ctx.Done():
		why = errors.New("interrupted; the child was stopped and the lock released")
	}
	logger.Info("stopping the child", "reason", why)
	stopChild(cmd.Process.Pid, exited, logger)
	return nil, why
}

// stopChild sends SIGTERM to the child's process group, SIGKILL after
// childKillGrace, and waits for the child to exit.
func stopChild(pid int, exited <-chan error, logger *slog.Logger) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	t := time.NewTimer(childKillGrace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		logger.Warn("the child is still running after SIGTERM; sending SIGKILL", "grace", childKillGrace)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
	// Whatever the child left in its group (a shell's background jobs)
	// goes with it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
