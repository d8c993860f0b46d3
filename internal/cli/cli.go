// Package cli is hive's command line: one file per subcommand. Every
// subcommand but daemon talks to the daemon through package client only.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hivetools/hive/internal/client"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/termsafe"
)

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "0.1.0-dev"

// ErrUsage marks a usage error (exit code 2).
var ErrUsage = errors.New("usage")

// ExitError makes hive exit with Code (a job's exit status, for logs -f
// and wait); main prints nothing more for it.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode is the exit status of the process whose Run returned err,
// after printing err once on stderr: 0 for nil; an ExitError's own code
// (a job's status, the error already printed); 2 for a usage error; 1
// for any other, as docker's CLI exits 1 for an error its daemon reports.
func ExitCode(err error, stderr io.Writer) int {
	var exit *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.Code
	case errors.Is(err, ErrUsage):
		fmt.Fprintln(stderr, "hive:", termsafe.Text(err.Error()))
		return 2
	default:
		fmt.Fprintln(stderr, "hive:", termsafe.Text(err.Error()))
		return 1
	}
}

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
	// hidden: not in the usage, the help collection, completion or man
	// page (a process hive starts itself, e.g. holder-guard).
	hidden bool
}

var commands []command

func register(c command) { commands = append(commands, c) }

// subUsages are the usage lines of subcommands of a command ("todo
// upsert"), for their help.
var subUsages = map[string]string{}

// registerSub registers the usage line of a subcommand, as newFlags
// shows it.
func registerSub(name, usage string) { subUsages[name] = usage }

// jsonOut writes v as one JSON line (<, > and & as they are).
func jsonOut(e Env, v any) error {
	enc := json.NewEncoder(e.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// output is how a command prints, by the flags every command shares:
// --json (or --format json) for scripts, -q for ids only, else a table.
type output struct {
	json, quiet bool
	format      *string
}

// outputFlags adds --json, --format table|json and, if quiet, -q/--quiet.
func outputFlags(fs *flagSet, quiet bool) *output {
	o := &output{}
	fs.BoolVar(&o.json, "json", false, "JSON output (same as --format json)")
	o.format = fs.String("format", "table", "table or json")
	if quiet {
		fs.BoolVar(&o.quiet, "q", false, "only the ids, one per line")
		fs.BoolVar(&o.quiet, "quiet", false, "same as -q")
	}
	return o
}

// check checks --format after parsing.
func (o *output) check() error {
	switch *o.format {
	case "table":
	case "json":
		o.json = true
	default:
		return fmt.Errorf("%w: --format %q: must be table or json", ErrUsage, *o.format)
	}
	return nil
}

// errHelp is what a subcommand returns after printing its help: Run
// turns it into success, and nothing else happens.
var errHelp = errors.New("help shown")

// Run runs the subcommand named by args[0]. `-h`, `--help` and `help CMD`
// print help on stdout and return nil, starting nothing.
func Run(ctx context.Context, e Env, args []string) error {
	// A daemon found by a command that starts one (client.Ensure) is
	// checked against this build.
	client.SetCaller(selfBuild, e.Stderr)
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-v" || args[0] == "-version") {
		b := selfBuild()
		fmt.Fprintf(e.Stdout, "hive %s (%s)\n", b, b.Go)
		return nil
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || (args[0] == "help" && len(args) == 1) {
		usage(e.Stdout)
		if len(args) == 0 {
			return ErrUsage
		}
		return nil
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		name, rest = args[1], append(append([]string(nil), args[2:]...), "-h")
	}
	for _, c := range commands {
		if c.name == name {
			err := c.run(ctx, e, rest)
			if errors.Is(err, errHelp) {
				return nil
			}
			return err
		}
	}
	// One line, as docker says it: the whole usage would bury the error.
	return fmt.Errorf("%w: unknown command %q (hive help lists the commands)", ErrUsage, name)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "hive: a terminal and an inbox for AI agents, as MCP tools.\n\nUsage:")
	for _, c := range commands {
		if c.hidden {
			continue
		}
		fmt.Fprintf(w, "  hive %s\n", c.usage)
	}
	fmt.Fprintln(w, "\nEvery command takes --state-dir DIR (else $HIVE_STATE_DIR, else ${XDG_STATE_HOME:-~/.local/state}/hive; on Windows %LOCALAPPDATA%\\hive).")
	fmt.Fprintln(w, "hive help CMD (or hive CMD -h) shows a command's flags; hive --version (-v) this build.")
}

// flagSet is a subcommand's flags and where its help goes.
type flagSet struct {
	*flag.FlagSet
	stdout io.Writer
}

// newFlags makes a flag set with the common --state-dir flag. Its help
// (see parse) goes to e.Stdout.
func newFlags(name string, e Env) (*flagSet, *string) {
	fs := flag.NewFlagSet("hive "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	line := name
	for _, c := range commands {
		if c.name == name {
			line = c.usage
		}
	}
	if u, ok := subUsages[name]; ok {
		line = u
	}
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: hive %s\n", line)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	fs.SetOutput(e.Stderr)
	captureFlags(name, fs)
	dir := fs.String("state-dir", "", "state directory (else $HIVE_STATE_DIR, else ${XDG_STATE_HOME:-~/.local/state}/hive; on Windows %LOCALAPPDATA%\\hive)")
	return &flagSet{FlagSet: fs, stdout: e.Stdout}, dir
}

// parse parses a subcommand's flags. A -h, -help or --help before any
// "--" prints the command's help on stdout and returns errHelp, so the
// command does nothing else.
func parse(fs *flagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(fs.stdout)
			fs.Usage()
			return errHelp
		}
	}
	// The flag package would print the error and the whole usage; the
	// error comes back once, on one line, with where the flags are.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return fmt.Errorf("%w: %s: %v (%s -h lists its flags)", ErrUsage, fs.Name(), err, fs.Name())
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
func interspersed(fs *flagSet, args []string) []string {
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
