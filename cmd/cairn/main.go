// Command cairn is the cairn agent and the command-line client of its HTTP
// API. It only turns flags, files and the environment into a config.Config
// or an api call; the work happens in package agent and on the agent.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/cairndns/cairn/api"
	"github.com/cairndns/cairn/internal/buildinfo"
	"github.com/urfave/cli/v2"
)

func main() {
	os.Exit(run(context.Background(), os.Args, os.Stdout, os.Stderr))
}

// The exit codes of the CLI.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed: the agent refused, was unreachable, a file was bad
	exitUsage = 2 // the command was not run: unknown command or flag, bad flag value, wrong arguments
)

// run runs the CLI and returns the process exit code. An error is printed
// to stderr as one line, "Error: …".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, flagsFirst(app, args)) // args.go: flags anywhere
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "Error: %s\n", errorLine(err))
	if _, ok := errors.AsType[*usageErr](err); ok {
		return exitUsage
	}
	if ce, ok := errors.AsType[*childExitError](err); ok { // lock.go: -child-exit-code
		return ce.ExitCode()
	}
	return exitError
}

// usageErr is an error in how a command was invoked, as opposed to one met
// while running it; run exits with exitUsage for it. Every check of the
// arguments and flags returns one (usagef), and so does urfave/cli's flag
// parsing (onUsageError), so the choice of exit code is made here alone.
type usageErr struct{ err error }

func (e *usageErr) Error() string { return e.err.Error() }
func (e *usageErr) Unwrap() error { return e.err }

// usagef returns a usage error formatted as fmt.Errorf does.
func usagef(format string, args ...any) error {
	return &usageErr{err: fmt.Errorf(format, args...)}
}

// newApp builds the CLI writing to stdout and stderr. It never exits the
// process: errors are returned from Run.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "cairn",
		Usage:     "DNS-centric service discovery",
		UsageText: "cairn <command> [options]",
		Description: "Every machine runs one \"cairn agent\"; applications find services by DNS\n" +
			"(dig @127.0.0.1 -p 8600 web.service.cluster SRV) and operators register them\n" +
			"with \"cairn services register\". Run \"cairn <command> -h\" for a command's options.",
		Writer:    stdout,
		ErrWriter: stderr,
		// Version is a command; the -v flag urfave adds would print
		// through a package-level printer.
		HideVersion: true,
		// One -tag or -meta value is one value, even with a comma in it.
		DisableSliceFlagSeparator: true,
		// Errors are returned to run, which prints them; never os.Exit here.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsageError("cairn"),
		Action:         groupAction("cairn"),
		Commands: []*cli.Command{
			agentCommand(),
			servicesCommand(),
			checksCommand(),
			maintCommand(),
			healthCommand(),
			catalogCommand(),
			queryCommand(),
			kvCommand(),
			lockCommand(), // lock.go
			membersCommand(),
			rttCommand(), // rtt.go
			joinCommand(),
			leaveCommand(),
			forceLeaveCommand(),
			reloadCommand(),  // reload.go
			monitorCommand(), // monitor.go
			debugCommand(),   // debug.go
			operatorCommand(),
			snapshotCommand(),
			keygenCommand(),
			keyringCommand(),
			aclCommand(),
			tlsCommand(),
			dnssecCommand(),
			watchCommand(),
			versionCommand(),
		},
	}
	ownHelpCommand(app) // helpflag.go
	return app
}

// onUsageError turns a flag parse error into a usage error of one line
// telling where help is.
func onUsageError(path string) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		return usagef("%v (see \"%s -h\")", err, path)
	}
}

// groupAction is the action of a command that only holds subcommands:
// without arguments it shows help, with one it names the unknown command.
func groupAction(path string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usagef("unknown command %q (see \"%s -h\" for the commands)",
				path+" "+c.Args().First(), path)
		}
		if path == "cairn" {
			return cli.ShowAppHelp(c)
		}
		return cli.ShowSubcommandHelp(c)
	}
}

// errorLine renders err as the one line main prints. An unreachable agent is
// reported by its own message alone; joined errors are separated by "; ".
func errorLine(err error) string {
	var ue *api.UnreachableError
	if errors.As(err, &ue) {
		return ue.Error()
	}
	var parts []string
	var flatten func(error)
	flatten = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, sub := range j.Unwrap() {
				flatten(sub)
			}
			return
		}
		parts = append(parts, strings.Join(strings.Fields(e.Error()), " "))
	}
	flatten(err)
	return strings.Join(parts, "; ")
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "Print the version of cairn",
		UsageText: "cairn version [-format table|json]",
		Description: "Prints the version of this binary, its VCS revision and build date as\n" +
			"the Go toolchain stamped them (\"unknown\" for a build without VCS\n" +
			"information), and the cairn protocol versions it speaks: agents whose\n" +
			"ranges do not overlap refuse each other (see docs/operating/upgrades.md).\n" +
			"With -format json, prints an object with Version, Revision, BuildDate,\n" +
			"Dirty, Protocol, ProtocolMin, ProtocolMax and GoVersion.",
		OnUsageError: onUsageError("cairn version"),
		Flags:        []cli.Flag{formatFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef(`"cairn version" takes no arguments`)
			}
			format, err := outputFormat(c, "cairn version")
			if err != nil {
				return err
			}
			v := currentVersion()
			if format == formatJSON {
				return writeJSON(c.App.Writer, v)
			}
			_, err = fmt.Fprintf(c.App.Writer, "cairn %s\nRevision %s\nBuild Date %s\nProtocol %d spoken, understands %d to %d\nGo %s\n",
				v.Version, v.Revision, cmp.Or(v.BuildDate, "unknown"), v.Protocol, v.ProtocolMin, v.ProtocolMax, v.GoVersion)
			return err
		},
	}
}

// versionInfo is what "cairn version" prints.
type versionInfo struct {
	Version   string
	Revision  string // 8 characters, "-dirty" when the tree was modified; "unknown"
	BuildDate string `json:",omitempty"` // the revision's commit time, RFC 3339
	Dirty     bool
	Protocol  uint8
	// ProtocolMin and ProtocolMax are the range this build accepts.
	ProtocolMin, ProtocolMax uint8
	GoVersion                string
}

func currentVersion() versionInfo {
	return versionInfo{
		Version: buildinfo.Version(), Revision: buildinfo.Revision(), BuildDate: buildinfo.BuildDate(), Dirty: buildinfo.Read().Dirty,
		Protocol: buildinfo.Protocol, ProtocolMin: buildinfo.ProtocolMin, ProtocolMax: buildinfo.ProtocolMax, GoVersion: runtime.Version(),
	}
}
