package main

import (
	"flag"
	"sync"

	"github.com/urfave/cli/v2"
)

// urfave/cli adds one package-level help flag (cli.HelpFlag) to every
// command, and applying a BoolFlag to a command's flag set writes to it.
// Runs of the CLI in one process at once (the tests run commands in
// parallel) would race on it; this wrapper serializes those writes.
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
