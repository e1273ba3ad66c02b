package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// cliReference is the reference of every command, which
// TestCLIReferenceIsComplete holds to the app's command tree.
const cliReference = "../../docs/reference/cli.md"

// commandHeading is a command's heading in the reference
// ("### `cairn acl token create`").
var commandHeading = regexp.MustCompile("^#+ `(cairn(?: [a-z][a-z0-9-]*)*)`\\s*$")

// TestCLIReferenceIsComplete fails when a command or subcommand has no
// section in docs/reference/cli.md, when a command's own flag is not
// named (as -flag) in its section, or when the reference has a section
// for a command the CLI does not have. The flags every command that talks
// to an agent shares are documented once and not looked for per command.
func TestCLIReferenceIsComplete(t *testing.T) {
	data, err := os.ReadFile(cliReference)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // command path → its section's text
	var current string
	for line := range strings.Lines(string(data)) {
		if m := commandHeading.FindStringSubmatch(line); m != nil {
			current = m[1]
			sections[current] = ""
			continue
		}
		if strings.HasPrefix(line, "#") {
			current = ""
		}
		if current != "" {
			sections[current] += line
		}
	}
	shared := map[string]bool{}
	for _, f := range agentFlags() {
		shared[f.Names()[0]] = true
	}

	commands := map[string]bool{}
	var missing, missingFlags, unknown []string
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := path + " " + c.Name
			commands[p] = true
			text, ok := sections[p]
			if !ok {
				missing = append(missing, p)
			}
			for _, f := range c.Flags {
				name := f.Names()[0]
				if shared[name] || name == "help" || !ok {
					continue
				}
				if !regexp.MustCompile(`(^|[^a-z0-9-])-` + regexp.QuoteMeta(name) + `($|[^a-z0-9-])`).MatchString(text) {
					missingFlags = append(missingFlags, p+" -"+name)
				}
			}
			walk(p, c.Subcommands)
		}
	}
	walk("cairn", newApp(io.Discard, io.Discard).Commands)
	for p := range sections {
		if !commands[p] {
			unknown = append(unknown, p)
		}
	}
	slices.Sort(unknown)
	if len(missing) > 0 {
		t.Errorf("commands missing from docs/reference/cli.md (add a heading \"### `cairn …`\" with its usage and flags):\n  %s", strings.Join(missing, "\n  "))
	}
	if len(missingFlags) > 0 {
		t.Errorf("flags not named in their command's section of docs/reference/cli.md (write each as -flag there):\n  %s", strings.Join(missingFlags, "\n  "))
	}
	if len(unknown) > 0 {
		t.Errorf("docs/reference/cli.md has sections for commands the CLI does not have (remove or rename them):\n  %s", strings.Join(unknown, "\n  "))
	}
}
