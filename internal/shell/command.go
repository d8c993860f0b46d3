package shell

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// getopt describes the options of a command in the GNU style: short options
// cluster (-rf), long options take "=value" or the next argument, options and
// operands may be mixed, and "--" ends the options.
type getopt struct {
	short    string   // short options that take an argument (attached or next)
	optional string   // short options whose argument can only be attached (mysql -pSECRET)
	long     []string // long options that take an argument
}

// opt is one parsed option: a letter for a short option, a name for a long one.
type opt struct {
	name  string
	value string
}

// parse splits args (without the command name) into options and operands.
func (g getopt) parse(args []string) (opts []opt, operands []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			if !hasValue && slices.Contains(g.long, name) && i+1 < len(args) {
				i++
				value = args[i]
			}
			opts = append(opts, opt{name, value})
		case len(a) > 1 && a[0] == '-':
		cluster:
			for j := 1; j < len(a); j++ {
				c := a[j : j+1]
				switch {
				case strings.Contains(g.short, c):
					value := a[j+1:]
					if value == "" && i+1 < len(args) {
						i++
						value = args[i]
					}
					opts = append(opts, opt{c, value})
					break cluster
				case strings.Contains(g.optional, c):
					opts = append(opts, opt{c, a[j+1:]})
					break cluster
				default:
					opts = append(opts, opt{c, ""})
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	return opts, operands
}

// has reports whether any of names was given.
func has(opts []opt, names ...string) bool {
	return slices.ContainsFunc(opts, func(o opt) bool { return slices.Contains(names, o.name) })
}

// values returns the arguments given to any of names, in order.
func values(opts []opt, names ...string) []string {
	var out []string
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			out = append(out, o.value)
		}
	}
	return out
}

// skip returns args after the leading options of a wrapper (sudo -u root CMD…):
// parsing stops at the first operand, which is where the wrapped command starts.
func (g getopt) skip(args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:]
		case len(a) < 2 || a[0] != '-':
			return args[i:]
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			if !hasValue && slices.Contains(g.long, name) {
				i++
			}
		default:
			for j := 1; j < len(a); j++ {
				if strings.Contains(g.short, a[j:j+1]) {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return nil
}

// wrappers are commands that run another command given as their remaining
// arguments, with the options that take an argument.
var wrappers = map[string]getopt{
	"sudo": {short: "ugCDhprtTUR", long: []string{"user", "group", "close-from", "chdir",
		"host", "prompt", "role", "type", "command-timeout", "other-user", "chroot"}},
	"doas":     {short: "uC"},
	"nice":     {short: "n", long: []string{"adjustment"}},
	"nohup":    {},
	"setsid":   {},
	"chronic":  {},
	"unbuffer": {},
	"time":     {short: "fo", long: []string{"format", "output"}},
	"command":  {},
	"builtin":  {},
	"exec":     {short: "a"},
	"xargs": {short: "IndPLsEa", long: []string{"arg-file", "delimiter", "max-args",
		"max-procs", "max-lines", "max-chars", "eof", "process-slot-var"}},
	"timeout": {short: "sk", long: []string{"signal", "kill-after"}},
	"stdbuf":  {short: "ioe", long: []string{"input", "output", "error"}},
	"ionice":  {short: "cn", long: []string{"class", "classdata"}},
}

// unwrap strips wrapper commands (sudo, env, nice, nohup, time, command, exec,
// xargs, timeout N, …) and their options from args and returns the command that
// really runs, with the names of the wrappers stripped, outermost first. It
// returns no command when the wrappers run none (sudo -v, command -v x).
func unwrap(args []string) (cmd []string, outer []string) {
	for len(args) > 0 && len(outer) < 16 {
		name := base(args[0])
		rest := args[1:]
		g, ok := wrappers[name]
		switch {
		case name == "env":
			rest = envSkip(rest)
		case !ok:
			return args, outer
		case name == "command" && slices.ContainsFunc(rest, func(a string) bool {
			return a == "-v" || a == "-V" || a == "-pv" || a == "-pV"
		}):
			return nil, append(outer, name)
		default:
			rest = g.skip(rest)
		}
		switch name {
		case "sudo":
			rest = skipAssigns(rest)
		case "timeout":
			if len(rest) > 0 {
				rest = rest[1:] // the duration
			}
		case "xargs":
			if len(rest) == 0 {
				rest = []string{"echo"}
			}
		}
		outer = append(outer, name)
		args = rest
	}
	return nil, outer
}

// envSkip skips env's options and NAME=value arguments; env -S splits its
// argument into words like a shell would.
func envSkip(args []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return skipAssigns(args[i+1:])
		case a == "-S" || a == "--split-string":
			if i+1 < len(args) {
				return append(split(args[i+1]), args[i+2:]...)
			}
			return nil
		case strings.HasPrefix(a, "--split-string="):
			return append(split(strings.TrimPrefix(a, "--split-string=")), args[i+1:]...)
		case strings.HasPrefix(a, "-S"):
			return append(split(a[2:]), args[i+1:]...)
		case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
			i++
		case len(a) > 1 && a[0] == '-':
		case strings.Contains(a, "=") && identifier(a[:strings.IndexByte(a, '=')]):
		default:
			return args[i:]
		}
	}
	return nil
}

func skipAssigns(args []string) []string {
	for len(args) > 0 && assignLike(args[0]) {
		args = args[1:]
	}
	return args
}

// split splits s into words as bash would for a simple command; it returns nil
// when s is not one.
func split(s string) []string {
	f, _ := parse(s)
	if f == nil || len(f.Stmts) == 0 {
		return nil
	}
	if c, ok := f.Stmts[0].Cmd.(*syntax.CallExpr); ok {
		return words(c.Args)
	}
	return nil
}

// gitSub returns git's subcommand and its arguments, skipping global options.
func gitSub(args []string) (string, []string) {
	rest := getopt{short: "Cc", long: []string{"git-dir", "work-tree", "namespace",
		"config-env", "super-prefix"}}.skip(args)
	if len(rest) == 0 {
		return "", nil
	}
	return rest[0], rest[1:]
}
