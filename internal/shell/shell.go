// Package shell analyses the command strings given to terminal_exec and picks the
// interpreter that runs them.
//
// Every decision about a command string is made on the syntax tree produced by the
// bash parser of mvdan.cc/sh/v3/syntax, never by pattern matching the raw string:
//
//   - [Plan] decides whether a command can be executed directly (argv, no shell) or
//     needs bash.
//   - [Warning] flags destructive commands (rm -rf, git push --force, DROP TABLE…).
//   - [Semantic] interprets an exit status for the command bash reports it for
//     (grep exit 1 is "No matches found", 137 is SIGKILL…).
//   - [Resolve] finds the interpreter allowed on this platform, [Shell.Args] builds
//     its argv, and [CleanEnv] strips zsh configuration from an environment.
//   - [Default] and [Shell.Env] are the one shell policy every command line and
//     PTY shell of hive runs under (/bin/bash, zsh variables removed, $SHELL
//     ignored).
//
// All functions are pure apart from Resolve (which looks at the file system) and
// are safe for concurrent use.
package shell

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Interpreter kinds reported in Shell.Kind (and as shell_kind by terminal_exec).
const (
	KindBash       = "bash"
	KindPowerShell = "powershell"
	KindCmd        = "cmd"
)

// Shell is an interpreter able to run a command string.
// The zero value is not usable; get one from [Resolve].
type Shell struct {
	Path string // absolute path of the executable
	Kind string // KindBash, KindPowerShell or KindCmd
}

// Args returns the argv that runs cmd with s: [Path -c cmd] for bash,
// [Path -NoProfile -NonInteractive -Command cmd] for PowerShell and [Path /C cmd] for
// cmd. cmd is passed as one argument, unmodified. An unknown Kind is treated as bash.
func (s Shell) Args(cmd string) []string {
	switch s.Kind {
	case KindPowerShell:
		return []string{s.Path, "-NoProfile", "-NonInteractive", "-Command", cmd}
	case KindCmd:
		return []string{s.Path, "/C", cmd}
	default:
		return []string{s.Path, "-c", cmd}
	}
}

// CleanEnv returns a copy of env ("KEY=value" entries) without ZDOTDIR and without
// any variable whose key starts with "ZSH_", so that zsh configuration cannot leak
// into the commands we run. Keys are compared exactly (case-sensitive) on the part
// before the first '='; every other entry is kept, in order. The input is not
// modified. The result is never nil, so assigning it to exec.Cmd.Env never means
// "inherit the daemon's environment".
func CleanEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !zshVar(kv) {
			out = append(out, kv)
		}
	}
	return out
}

// parse parses src as a bash program. The returned file may be non-nil and hold
// the statements parsed before a syntax error. Safe for concurrent use.
func parse(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	return p.Parse(strings.NewReader(src), "")
}

// parsers keeps parsers for reuse (one is a few KiB to allocate; every
// command line of every tool call is parsed, by the policy and the
// warnings). A parser is reset by each Parse and used by one goroutine at
// a time.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// unquote returns the value of w after quote removal and whether w is fully
// literal (no expansion of any kind: parameters, substitutions, arithmetic,
// globs of the extglob kind, $'...' or $"..." quoting). Parts that are not literal
// are rendered as "$" so that the literal parts around them can still be examined.
// Unquoted globs, braces and tildes are kept as written; see [feature].
func unquote(w *syntax.Word) (string, bool) {
	var b strings.Builder
	literal := true
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				literal = false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				literal = false
			}
			for _, inner := range p.Parts {
				if l, ok := inner.(*syntax.Lit); ok {
					b.WriteString(unescape(l.Value, true))
					continue
				}
				literal = false
				b.WriteString("$")
			}
		default:
			literal = false
			b.WriteString("$")
		}
	}
	return b.String(), literal
}

// unescape removes backslash quoting from a literal as bash does: outside double
// quotes a backslash quotes any character; inside them only $ ` " \ and newline.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i == len(s)-1 {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		if dquoted && !strings.ContainsRune("$`\"\\\n", rune(next)) {
			b.WriteByte(c)
			continue
		}
		i++
		if next != '\n' {
			b.WriteByte(next)
		}
	}
	return b.String()
}

// words returns the unquoted values of ws (see [unquote]).
func words(ws []*syntax.Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i], _ = unquote(w)
	}
	return out
}

// base returns the last element of a slash-separated command path.
func base(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// cmdBuiltins are cmd.exe's internal commands: no program of the name
// exists on a stock Windows, so run directly they are "not found".
var cmdBuiltins = map[string]bool{
	"assoc": true, "break": true, "call": true, "cd": true, "chdir": true, "cls": true,
	"color": true, "copy": true, "date": true, "del": true, "dir": true, "echo": true,
	"endlocal": true, "erase": true, "exit": true, "for": true, "ftype": true, "goto": true,
	"if": true, "md": true, "mkdir": true, "mklink": true, "move": true, "path": true,
	"pause": true, "popd": true, "prompt": true, "pushd": true, "rd": true, "rem": true,
	"ren": true, "rename": true, "rmdir": true, "set": true, "setlocal": true, "shift": true,
	"start": true, "time": true, "title": true, "type": true, "ver": true, "verify": true,
	"vol": true,
}

// powerShellBuiltins are PowerShell's aliases that name no program on
// Windows (Windows PowerShell 5.1's default aliases of the commands agents
// type; a cmdlet's own Verb-Noun name is never a program either).
var powerShellBuiltins = map[string]bool{
	"cat": true, "cd": true, "chdir": true, "clear": true, "cls": true, "copy": true,
	"cp": true, "del": true, "dir": true, "echo": true, "erase": true, "gc": true,
	"gci": true, "gi": true, "gl": true, "gm": true, "gps": true, "history": true,
	"kill": true, "ls": true, "md": true, "mkdir": true, "mi": true, "move": true, "mv": true,
	"popd": true, "ps": true, "pushd": true, "pwd": true, "rd": true, "ren": true,
	"ri": true, "rm": true, "rmdir": true, "select": true, "set": true, "sl": true,
	"sleep": true, "sort": true, "type": true, "where": true, "write": true,
}

// Builtin reports whether name, as a command's first word, is run by
// the shell itself (a builtin, keyword or alias of its Kind), with no
// program of that name to run directly on Windows. Case does not matter
// to cmd and PowerShell. For bash it is bash's builtins and keywords,
// echo, printf, true and false included (Git Bash's programs of those
// names are not on a Windows PATH).
func (s Shell) Builtin(name string) bool {
	switch s.Kind {
	case KindCmd:
		return cmdBuiltins[strings.ToLower(name)]
	case KindPowerShell:
		n := strings.ToLower(name)
		return powerShellBuiltins[n] || strings.Contains(n, "-") && !strings.ContainsAny(n, `.\/`)
	}
	switch name {
	case "echo", "printf", "true", "false":
		return true
	}
	return builtins[name]
}
