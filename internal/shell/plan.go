package shell

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Decision says how to run a command string.
type Decision struct {
	// Argv is the command after quote removal when NeedsShell is false; it is
	// empty for a blank command (which the caller rejects) and nil when
	// NeedsShell is true.
	Argv []string
	// NeedsShell is true when the command uses shell syntax and must run as
	// bash -c.
	NeedsShell bool
	// Reason names the first shell feature found ("pipeline", "glob",
	// "builtin cd", "parse error: …"); empty when NeedsShell is false.
	Reason string
}

// builtins are the bash builtins and keywords that make a command need bash.
// echo, printf, true and false are left out on purpose: their coreutils
// programs behave the same for the arguments agents use.
var builtins = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "bind": true,
	"break": true, "builtin": true, "caller": true, "cd": true, "command": true,
	"compgen": true, "complete": true, "compopt": true, "continue": true,
	"declare": true, "dirs": true, "disown": true, "enable": true, "eval": true,
	"exec": true, "exit": true, "export": true, "fc": true, "fg": true,
	"getopts": true, "hash": true, "help": true, "history": true, "jobs": true,
	"kill": true, "let": true, "local": true, "logout": true, "mapfile": true,
	"popd": true, "pushd": true, "pwd": true, "read": true, "readarray": true,
	"readonly": true, "return": true, "set": true, "shift": true, "shopt": true,
	"source": true, "suspend": true, "test": true, "times": true, "trap": true,
	"type": true, "typeset": true, "ulimit": true, "umask": true, "unalias": true,
	"unset": true, "wait": true,
	// keywords
	"!": true, "[[": true, "]]": true, "{": true, "}": true, "case": true,
	"coproc": true, "do": true, "done": true, "elif": true, "else": true,
	"esac": true, "fi": true, "for": true, "function": true, "if": true,
	"in": true, "select": true, "then": true, "time": true, "until": true,
	"while": true,
}

// Plan decides whether cmd can be executed directly. A command is direct only if
// it is one simple command without redirections, assignments or background, whose
// command word is not a bash builtin or keyword and whose words are all literal
// after quote removal (no expansion, glob, brace, tilde or $'...' quoting).
// Everything else, including a command bash cannot parse, needs the shell. A blank
// command (or one made only of comments) gives the zero Decision.
func Plan(cmd string) Decision {
	if d, ok := plainPlan(cmd); ok {
		return d
	}
	return parsedPlan(cmd)
}

// plainPlan is Plan of the commonest command, without the parser: words of
// letters, digits and _-./,:@%+= apart by spaces, its command word no
// builtin or keyword and without '=' (an assignment). ok is false for
// anything else (Plan parses it). A word of those characters has nothing
// bash expands or removes, so its value is as written: the decision is
// the parser's (FuzzPlan holds the two the same).
func plainPlan(cmd string) (Decision, bool) {
	argv, ok := plainArgv(cmd)
	if !ok {
		return Decision{}, false
	}
	return Decision{Argv: argv}, true
}

// plainArgv is the words of a plain command (see plainPlan), as bash
// reads them; ok is false for any other command.
func plainArgv(cmd string) (argv []string, ok bool) {
	for i := 0; i < len(cmd); i++ {
		if c := cmd[i]; !plainByte[c] && c != ' ' {
			return nil, false
		}
	}
	argv = strings.Fields(cmd)
	if len(argv) == 0 || builtins[argv[0]] || strings.IndexByte(argv[0], '=') >= 0 {
		return nil, false
	}
	return argv, true
}

// plainByte are the bytes of plainPlan's words.
var plainByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_-./,:@%+=" {
		t[c] = true
	}
	return t
}()

// parsedPlan is Plan through bash's grammar (the parser).
func parsedPlan(cmd string) Decision {
	// The parser drops a carriage return before a newline even inside
	// quotes ('a\r\nb' reads as "a\nb"); bash keeps it. A command with one
	// runs under bash, which reads it as it is.
	if strings.Contains(cmd, "\r") {
		return shellFor("carriage return")
	}
	f, err := parse(cmd)
	if err != nil {
		return shellFor("parse error: " + err.Error())
	}
	switch len(f.Stmts) {
	case 0:
		return Decision{}
	case 1:
	default:
		return shellFor("command list")
	}
	s := f.Stmts[0]
	if why := stmtFeature(s); why != "" {
		return shellFor(why)
	}
	call := s.Cmd.(*syntax.CallExpr) // stmtFeature accepts nothing else
	argv := make([]string, len(call.Args))
	for i, w := range call.Args {
		if why := feature(w); why != "" {
			return shellFor(why)
		}
		argv[i], _ = unquote(w)
	}
	switch name := argv[0]; {
	case name == "":
		return shellFor("empty command name")
	case builtins[name]:
		return shellFor("builtin " + name)
	}
	return Decision{Argv: argv}
}

func shellFor(reason string) Decision {
	return Decision{NeedsShell: true, Reason: reason}
}

// stmtFeature returns the shell feature s uses at the statement level, or "" if s
// is a plain simple command (a *syntax.CallExpr with arguments and no assignments).
func stmtFeature(s *syntax.Stmt) string {
	switch {
	case s.Negated:
		return "negation (!)"
	case s.Background:
		return "background (&)"
	case s.Coprocess || s.Disown:
		return "coprocess"
	}
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			return "heredoc"
		case syntax.WordHdoc:
			return "here-string"
		}
	}
	if len(s.Redirs) > 0 {
		return "redirect"
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 {
			return "variable assignment"
		}
		if len(c.Args) == 0 {
			return "empty command"
		}
		return ""
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			return "pipeline"
		}
		return "&& / || list"
	case *syntax.Subshell:
		return "subshell"
	case *syntax.Block:
		return "block"
	case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
		return "control flow"
	case *syntax.FuncDecl:
		return "function definition"
	case *syntax.ArithmCmd, *syntax.LetClause:
		return "arithmetic"
	case *syntax.TestClause:
		return "[[ test ]]"
	case *syntax.DeclClause:
		return "builtin " + c.Variant.Value
	case *syntax.TimeClause:
		return "keyword time"
	case *syntax.CoprocClause:
		return "coprocess"
	default:
		return "shell syntax"
	}
}

// feature returns the first shell expansion word w needs, or "" if w is literal.
func feature(w *syntax.Word) string {
	for _, part := range w.Parts {
		if why := partFeature(part); why != "" {
			return why
		}
	}
	if first, ok := w.Parts[0].(*syntax.Lit); ok {
		if strings.HasPrefix(first.Value, "~") {
			return "tilde expansion"
		}
		// bash also expands ~ after '=' and ':' in arguments shaped like
		// assignments (printf %s a=~ prints a=/home/me).
		if assignLike(first.Value) && slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
			l, ok := p.(*syntax.Lit)
			return ok && unescaped(l.Value, "~")
		}) {
			return "tilde expansion"
		}
	}
	// SplitBraces reports any '{' it handled; only a BraceExp it leaves in the
	// word is an expansion ({} and {x} stay literal in bash).
	braced := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if syntax.SplitBraces(braced) && slices.ContainsFunc(braced.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	}) {
		return "brace expansion"
	}
	return ""
}

func partFeature(part syntax.WordPart) string {
	switch p := part.(type) {
	case *syntax.Lit:
		if glob(p.Value) {
			return "glob"
		}
	case *syntax.SglQuoted:
		if p.Dollar {
			return "ANSI-C quoting ($'...')"
		}
	case *syntax.DblQuoted:
		if p.Dollar {
			return `locale quoting ($"...")`
		}
		for _, inner := range p.Parts {
			if _, ok := inner.(*syntax.Lit); !ok {
				return partFeature(inner)
			}
		}
	case *syntax.ParamExp:
		return "parameter expansion"
	case *syntax.CmdSubst:
		return "command substitution"
	case *syntax.ArithmExp:
		return "arithmetic expansion"
	case *syntax.ProcSubst:
		return "process substitution"
	case *syntax.ExtGlob:
		return "extended glob"
	case *syntax.BraceExp:
		return "brace expansion"
	default:
		return "shell expansion"
	}
	return ""
}

// unescaped reports whether the raw unquoted literal s contains one of chars
// that is not quoted by a backslash.
func unescaped(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte(chars, s[i]) >= 0 {
			return true
		}
	}
	return false
}

// glob reports whether the raw unquoted literal s is a pattern: an unescaped *
// or ?, or an unescaped [ closed by a later ] (a lone [ is literal in bash).
func glob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if unescaped(s[i+1:], "]") {
				return true
			}
		}
	}
	return false
}

// assignLike reports whether s starts with NAME= (a valid shell identifier).
func assignLike(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && identifier(name)
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
