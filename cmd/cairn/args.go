package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// keepsOrder reports whether the arguments of the command at path are left
// alone after the first positional one: they end with another program and
// its own arguments (HANDLER ARG..., CMD ARG...), whose flags are not
// cairn's. As in Consul, the command's flags come before the program.
func keepsOrder(path string) bool {
	switch path {
	case "cairn watch", "cairn lock":
		return true
	}
	return false
}

// flagsFirst returns args (os.Args: the program, then the command path and
// its arguments) with the flags of the command they invoke moved before
// its positional arguments, so that flags are taken wherever they are
// typed: "cairn checks fail web1-ttl -http-addr X". urfave/cli, like Go's
// flag package, stops at the first positional argument and would take the
// rest as arguments. Only the command's own flags move (with their value,
// when they take one); an argument that looks like a flag but is not one
// of them ("-5" as a value) stays where it is, so nothing that parsed
// before parses differently now. "--" still ends the flags: it is kept,
// ahead of every positional argument, and what follows it stays as it is.
// A group, an unknown command, a command that skips flag parsing and those
// of keepsOrder are left as they are.
func flagsFirst(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmds, path := app.Commands, app.Name
	var cmd *cli.Command
	i := 1
	for ; i < len(args); i++ {
		next := findCommand(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds, path = next, next.Subcommands, path+" "+next.Name
	}
	if cmd == nil || len(cmd.Subcommands) > 0 || cmd.SkipFlagParsing || keepsOrder(path) {
		return args
	}
	var flags, positional []string
	dashes := false
	rest := args[i:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			dashes = true
			positional = append(positional, rest[j+1:]...)
			break
		}
		takesValue, ok := commandFlag(cmd, a)
		if !ok {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue && j+1 < len(rest) {
			j++
			flags = append(flags, rest[j])
		}
	}
	out := append(slices.Clone(args[:i]), flags...)
	if dashes {
		out = append(out, "--")
	}
	return append(out, positional...)
}

// findCommand returns the command of cmds called name, or nil.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// commandFlag reports whether arg is one of cmd's flags (-name, --name,
// -name=value, or help's -h and -help), and whether it takes its value
// from the next argument.
func commandFlag(cmd *cli.Command, arg string) (takesValue, ok bool) {
	name, found := strings.CutPrefix(arg, "-")
	if !found || name == "" {
		return false, false
	}
	name = strings.TrimPrefix(name, "-")
	name, _, inline := strings.Cut(name, "=")
	if name == "" || strings.HasPrefix(name, "-") {
		return false, false
	}
	if name == "h" || name == "help" {
		return false, true
	}
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			tv, _ := f.(interface{ TakesValue() bool })
			return tv != nil && tv.TakesValue() && !inline, true
		}
	}
	return false, false
}
