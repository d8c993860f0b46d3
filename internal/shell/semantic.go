package shell

import (
	"fmt"
	"slices"
	"strconv"

	"mvdan.cc/sh/v3/syntax"
)

// Status kinds reported in Status.Kind (and as semantic_status by terminal_exec).
const (
	StatusOK     = "ok"
	StatusSignal = "signal"
	StatusError  = "error"
)

// Status is the meaning of an exit status.
type Status struct {
	Kind    string // StatusOK, StatusSignal or StatusError
	Message string // a short explanation; "" when there is nothing to say
}

// row is one entry of the exit-status catalog. docs/exit-codes.md documents the
// same catalog; a test keeps them in step.
type row struct {
	cmd   string   // command name; "git sub" for a git subcommand; "" for any command
	flags []string // the row applies only if one of these arguments is given; nil: always
	code  int
	kind  string
	msg   string
}

// catalog is the exit-status catalog. Rows naming a command come first and win
// over the rows for any command ("").
var catalog = []row{
	{cmd: "grep", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "egrep", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "fgrep", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "zgrep", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "rg", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "ag", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "ack", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "git grep", code: 1, kind: StatusOK, msg: "No matches found"},
	{cmd: "pgrep", code: 1, kind: StatusOK, msg: "No processes matched"},
	{cmd: "pkill", code: 1, kind: StatusOK, msg: "No processes matched"},
	{cmd: "diff", code: 1, kind: StatusOK, msg: "Files differ"},
	{cmd: "cmp", code: 1, kind: StatusOK, msg: "Files differ"},
	{cmd: "git diff", flags: []string{"--exit-code", "--quiet", "--no-index"}, code: 1, kind: StatusOK, msg: "Differences found"},
	{cmd: "test", code: 1, kind: StatusOK, msg: "Condition is false"},
	{cmd: "[", code: 1, kind: StatusOK, msg: "Condition is false"},
	{cmd: "[[", code: 1, kind: StatusOK, msg: "Condition is false"},
	{cmd: "((", code: 1, kind: StatusOK, msg: "Arithmetic result is zero"},
	{cmd: "let", code: 1, kind: StatusOK, msg: "Arithmetic result is zero"},
	{cmd: "expr", code: 1, kind: StatusOK, msg: "Expression is null or zero"},
	{cmd: "timeout", code: 124, kind: StatusError, msg: "Timed out (timeout)"},
	// Exit 2 is "serious trouble", not misuse, for these.
	{cmd: "ls", code: 1, kind: StatusError, msg: "Minor problem (e.g. a subdirectory could not be read)"},
	{cmd: "ls", code: 2, kind: StatusError, msg: "Serious trouble (e.g. a file or directory given does not exist or cannot be read)"},
	{cmd: "dir", code: 2, kind: StatusError, msg: "Serious trouble (e.g. a file or directory given does not exist or cannot be read)"},
	{cmd: "vdir", code: 2, kind: StatusError, msg: "Serious trouble (e.g. a file or directory given does not exist or cannot be read)"},
	{cmd: "grep", code: 2, kind: StatusError, msg: "Error (e.g. a file could not be read, or a bad pattern)"},
	{cmd: "egrep", code: 2, kind: StatusError, msg: "Error (e.g. a file could not be read, or a bad pattern)"},
	{cmd: "fgrep", code: 2, kind: StatusError, msg: "Error (e.g. a file could not be read, or a bad pattern)"},
	{cmd: "zgrep", code: 2, kind: StatusError, msg: "Error (e.g. a file could not be read, or a bad pattern)"},
	{cmd: "rg", code: 2, kind: StatusError, msg: "Error (e.g. a file could not be read, or a bad pattern)"},
	{cmd: "diff", code: 2, kind: StatusError, msg: "Trouble (e.g. a file is missing or unreadable)"},
	{cmd: "cmp", code: 2, kind: StatusError, msg: "Trouble (e.g. a file is missing or unreadable)"},
	{cmd: "sort", flags: []string{"-c", "-C", "--check"}, code: 1, kind: StatusOK, msg: "Input is not sorted"},
	{cmd: "sort", code: 2, kind: StatusError, msg: "Error (e.g. a file could not be read)"},
	{cmd: "test", code: 2, kind: StatusError, msg: "Error in the expression"},
	{cmd: "[", code: 2, kind: StatusError, msg: "Error in the expression"},
	{cmd: "expr", code: 2, kind: StatusError, msg: "Invalid expression"},
	{cmd: "", code: 1, kind: StatusError, msg: "General error"},
	{cmd: "", code: 2, kind: StatusError, msg: "Misuse of shell builtin / usage error"},
	{cmd: "", code: 126, kind: StatusError, msg: "Command found but not executable"},
	{cmd: "", code: 127, kind: StatusError, msg: "Command not found"},
}

// Semantic returns the meaning of exitCode for cmd. 0 is ok. Otherwise it looks
// at the command whose status bash reports, the last simple command of the last
// pipeline of the top-level list (after stripping sudo, env, time, nice,
// timeout N… and taking the base name of /usr/bin/grep), and applies the catalog:
// grep exit 1 is ok "No matches found", timeout's 124 is "Timed out (timeout)",
// 127 is "Command not found", 128+n is the signal n (Linux numbering: 137 is
// "Killed by SIGKILL (9)"). When set -o pipefail is in effect before that
// pipeline, a row that makes a status ok applies only if every command of the
// pipeline has such a row. Unknown non-zero statuses are errors with no message.
func Semantic(cmd string, exitCode int) Status {
	if exitCode == 0 {
		return Status{Kind: StatusOK}
	}
	if r, ok := match(cmd, exitCode); ok {
		return Status{Kind: r.kind, Message: r.msg}
	}
	if exitCode > 128 {
		if msg := signalMessage(exitCode - 128); msg != "" {
			return Status{Kind: StatusSignal, Message: msg}
		}
	}
	return Status{Kind: StatusError}
}

// stage is a command of the pipeline whose status bash reports.
type stage struct {
	key   string   // catalog name: "grep", "git diff", "[[" …; "" if unknown
	args  []string // the arguments after the key
	outer []string // wrappers around it (sudo, timeout…)
}

func match(cmd string, code int) (row, bool) {
	var stages []stage
	pipefail := false
	if f, err := parse(cmd); err == nil && len(f.Stmts) > 0 {
		var at syntax.Pos
		stages, at = final(f.Stmts[len(f.Stmts)-1])
		pipefail = pipefailAt(f, at)
	}
	if len(stages) > 0 {
		r, ok := stages[len(stages)-1].lookup(code)
		if ok && (r.kind != StatusOK || !pipefail || all(stages, code)) {
			return r, true
		}
		if pipefail {
			// Any command may have set the status: only rows that are not
			// ok (timeout's 124) are safe to apply.
			for _, s := range slices.Backward(stages) {
				if r, ok := s.lookup(code); ok && r.kind != StatusOK {
					return r, true
				}
			}
		}
	}
	for _, r := range catalog {
		if r.cmd == "" && r.code == code {
			return r, true
		}
	}
	return row{}, false
}

// all reports whether every stage has a row making code ok.
func all(stages []stage, code int) bool {
	for _, s := range stages {
		if r, ok := s.lookup(code); !ok || r.kind != StatusOK {
			return false
		}
	}
	return true
}

// lookup finds the row for code naming the stage's command, then one naming a
// wrapper around it (timeout).
func (s stage) lookup(code int) (row, bool) {
	for _, r := range catalog {
		if r.cmd != "" && r.cmd == s.key && r.code == code &&
			(r.flags == nil || slices.ContainsFunc(s.args, func(a string) bool { return slices.Contains(r.flags, a) })) {
			return r, true
		}
	}
	for _, r := range catalog {
		if r.cmd != "" && slices.Contains(s.outer, r.cmd) && r.code == code && r.flags == nil {
			return r, true
		}
	}
	return row{}, false
}

// final returns the stages of the pipeline whose status s reports, and where
// that pipeline starts. It returns no stages when the status is inverted (!).
func final(s *syntax.Stmt) ([]stage, syntax.Pos) {
	if s.Negated {
		return nil, s.Pos()
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op == syntax.AndStmt || c.Op == syntax.OrStmt {
			return final(c.Y)
		}
		var out []stage
		for _, e := range pipeline(s) {
			inner, _ := final(e)
			if len(inner) == 0 {
				inner = []stage{{}}
			}
			out = append(out, inner[len(inner)-1])
		}
		return out, s.Pos()
	case *syntax.Block:
		if len(c.Stmts) > 0 {
			return final(c.Stmts[len(c.Stmts)-1])
		}
	case *syntax.Subshell:
		if len(c.Stmts) > 0 {
			return final(c.Stmts[len(c.Stmts)-1])
		}
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return final(c.Stmt)
		}
	case *syntax.CallExpr:
		args, outer := unwrap(words(c.Args))
		if len(args) == 0 {
			return []stage{{outer: outer}}, s.Pos()
		}
		key, rest := base(args[0]), args[1:]
		if key == "git" {
			sub, subArgs := gitSub(rest)
			key, rest = "git "+sub, subArgs
		}
		return []stage{{key: key, args: rest, outer: outer}}, s.Pos()
	case *syntax.TestClause:
		return []stage{{key: "[["}}, s.Pos()
	case *syntax.ArithmCmd:
		return []stage{{key: "(("}}, s.Pos()
	case *syntax.LetClause:
		return []stage{{key: "let"}}, s.Pos()
	}
	return []stage{{}}, s.Pos()
}

// pipeline returns the commands of the pipeline s, in order.
func pipeline(s *syntax.Stmt) []*syntax.Stmt {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && !s.Negated && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		return append(pipeline(b.X), b.Y)
	}
	return []*syntax.Stmt{s}
}

// pipefailAt reports whether set -o pipefail (and no later set +o pipefail)
// appears in f before position at.
func pipefailAt(f *syntax.File, at syntax.Pos) bool {
	on := false
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 || c.Pos().Offset() >= at.Offset() {
			return true
		}
		args := words(c.Args)
		if base(args[0]) != "set" {
			return true
		}
		for i, a := range args[1:] {
			if len(a) > 1 && (a[0] == '-' || a[0] == '+') && a[1] != '-' &&
				slices.Contains([]byte(a), 'o') && i+2 < len(args) && args[i+2] == "pipefail" {
				on = a[0] == '-'
			}
		}
		return true
	})
	return on
}

// signals holds the Linux signal names and how a death by each is described:
// text gives "Segmentation fault (SIGSEGV, 11)", verb gives "Killed by SIGKILL (9)".
var signals = [...]struct{ name, text, verb string }{
	1:  {name: "SIGHUP", text: "Hangup"},
	2:  {name: "SIGINT", verb: "Interrupted"},
	3:  {name: "SIGQUIT", text: "Quit"},
	4:  {name: "SIGILL", text: "Illegal instruction"},
	5:  {name: "SIGTRAP", text: "Trace/breakpoint trap"},
	6:  {name: "SIGABRT", text: "Aborted"},
	7:  {name: "SIGBUS", text: "Bus error"},
	8:  {name: "SIGFPE", text: "Floating-point exception"},
	9:  {name: "SIGKILL", verb: "Killed"},
	10: {name: "SIGUSR1", verb: "Killed"},
	11: {name: "SIGSEGV", text: "Segmentation fault"},
	12: {name: "SIGUSR2", verb: "Killed"},
	13: {name: "SIGPIPE", text: "Broken pipe"},
	14: {name: "SIGALRM", text: "Alarm clock"},
	15: {name: "SIGTERM", verb: "Terminated"},
	16: {name: "SIGSTKFLT", verb: "Killed"},
	17: {name: "SIGCHLD", verb: "Killed"},
	18: {name: "SIGCONT", verb: "Killed"},
	19: {name: "SIGSTOP", verb: "Stopped"},
	20: {name: "SIGTSTP", verb: "Stopped"},
	21: {name: "SIGTTIN", verb: "Stopped"},
	22: {name: "SIGTTOU", verb: "Stopped"},
	23: {name: "SIGURG", verb: "Killed"},
	24: {name: "SIGXCPU", text: "CPU time limit exceeded"},
	25: {name: "SIGXFSZ", text: "File size limit exceeded"},
	26: {name: "SIGVTALRM", verb: "Killed"},
	27: {name: "SIGPROF", verb: "Killed"},
	28: {name: "SIGWINCH", verb: "Killed"},
	29: {name: "SIGIO", verb: "Killed"},
	30: {name: "SIGPWR", verb: "Killed"},
	31: {name: "SIGSYS", text: "Bad system call"},
}

// Linux real-time signals, named as bash's kill -l does.
const (
	sigRTMin = 34
	sigRTMax = 64
)

// SignalName returns the Linux name of signal n ("SIGKILL" for 9, "SIGRTMIN+2"
// for 36), or "" if n is not a Linux signal number.
func SignalName(n int) string {
	switch {
	case n > 0 && n < len(signals):
		return signals[n].name
	case n == sigRTMin:
		return "SIGRTMIN"
	case n == sigRTMax:
		return "SIGRTMAX"
	case n > sigRTMin && n <= (sigRTMin+sigRTMax)/2:
		return "SIGRTMIN+" + strconv.Itoa(n-sigRTMin)
	case n > sigRTMin && n < sigRTMax:
		return "SIGRTMAX-" + strconv.Itoa(sigRTMax-n)
	}
	return ""
}

// signalMessage describes a death by signal n, or returns "" for an unknown n.
func signalMessage(n int) string {
	name := SignalName(n)
	switch {
	case name == "":
		return ""
	case n < len(signals) && signals[n].text != "":
		return fmt.Sprintf("%s (%s, %d)", signals[n].text, name, n)
	case n < len(signals):
		return fmt.Sprintf("%s by %s (%d)", signals[n].verb, name, n)
	}
	return fmt.Sprintf("Killed by %s (%d)", name, n)
}
