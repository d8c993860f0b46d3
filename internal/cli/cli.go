// Package cli is hive's command line: one file per subcommand. Every
// subcommand but daemon talks to the daemon through package client only.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hivetools/hive/internal/paths"
)

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "0.1.0-dev"

// ErrUsage marks a usage error (exit code 2).
var ErrUsage = errors.New("usage")

// Env is what a subcommand may use of its process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Exe    string // path of the hive binary
}

type command struct {
	name  string
	usage string
	run   func(ctx context.Context, e Env, args []string) error
}

var commands []command

func register(c command) { commands = append(commands, c) }

// Run runs the subcommand named by args[0].
func Run(ctx context.Context, e Env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.Stdout)
		if len(args) == 0 {
			return ErrUsage
		}
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	usage(e.Stderr)
	return fmt.Errorf("%w: unknown command %q", ErrUsage, args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "hive: a terminal and an inbox for AI agents, as MCP tools.\n\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  hive %s\n", c.usage)
	}
	fmt.Fprintln(w, "\nEvery command takes --state-dir DIR (else $HIVE_STATE_DIR, else ${XDG_STATE_HOME:-~/.local/state}/hive).")
}

// newFlags makes a flag set with the common --state-dir flag.
func newFlags(name string, e Env) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("hive "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	dir := fs.String("state-dir", "", "state directory")
	return fs, dir
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}

func layout(dir string) (paths.Layout, error) {
	d, err := paths.StateDir(dir)
	if err != nil {
		return paths.Layout{}, err
	}
	return paths.Layout{Dir: d}, nil
}

// interspersed moves flags after positional arguments to the front, so
// `hive logs ID -f` works like `hive logs -f ID`. Arguments after "--"
// stay where they are.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") {
				if f := fs.Lookup(name); f != nil {
					if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
						if i+1 < len(args) {
							flags = append(flags, args[i+1])
							i++
						}
					}
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
