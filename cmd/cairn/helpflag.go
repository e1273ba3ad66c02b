package main

import (
	"flag"
	"sync"

	"github.com/urfave/cli/v2"
)

// urfave/cli shares package-level state between apps: one help flag
// (cli.HelpFlag), which applying to a command's flag set writes to, and
// one help command, which it adds to every command and writes to while
// setting commands up. Runs of the CLI in one process at once (the tests
// run commands in parallel) would race on them. The flag is wrapped so
// that its writes are serialized, and every app gets a help command of
// its own instead of the shared one.
func init() {
	if f, ok := cli.HelpFlag.(*cli.BoolFlag); ok {
		cli.HelpFlag = &serialFlag{BoolFlag: f}
	}
}

// serialFlag is a BoolFlag applied by one command at a time.
type serialFlag struct {
	*cli.BoolFlag
	mu sync.Mutex
}

func (f *serialFlag) Apply(set *flag.FlagSet) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.BoolFlag.Apply(set)
}

// ownHelpCommand gives app a help command of its own ("cairn help
// [COMMAND]") and keeps urfave's shared one out of every command; a
// command's help is its -h.
func ownHelpCommand(app *cli.App) {
	app.HideHelpCommand = true
	var hide func(cmds []*cli.Command)
	hide = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.HideHelpCommand = true
			hide(c.Subcommands)
		}
	}
	hide(app.Commands)
	// urfave adds its -h flag to an app only when the app has no command
	// named help; this one has.
	app.Flags = append(app.Flags, cli.HelpFlag)
	app.Commands = append(app.Commands, &cli.Command{
		Name:            "help",
		Aliases:         []string{"h"},
		Usage:           "Show the commands, or one command's help",
		ArgsUsage:       "[COMMAND]",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if name := c.Args().First(); name != "" {
				return cli.ShowCommandHelp(c, name)
			}
			return cli.ShowAppHelp(c)
		},
	})
}
