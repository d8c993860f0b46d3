package shell

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Word is one word of a simple command as [Walk] sees it, after quote
// removal ('…', "…", $'…' and backslashes) and the expansion of what is
// known before the command runs.
type Word struct {
	// Text is the word's value when Known. Otherwise it is a pattern of
	// the value: each part that cannot be known (a variable not set in
	// the line, a command substitution, a glob, a brace, a tilde) is a
	// "*" there, the literal parts around it are kept ("$D/x" is "*/x").
	Text string
	// Known reports whether Text is the word's value.
	Known bool
	// Spread reports whether the word may stand for any number of words
	// (an unquoted expansion, "$@", what xargs reads, an eval of an
	// unknown string); only an unknown word can spread.
	Spread bool
}

// Call is one simple command that a command line may run, as [Walk]
// sees it.
type Call struct {
	// Args are the command's words with the wrappers (sudo, env, nice,
	// nohup, timeout, xargs, command, exec, time, …) and their options
	// stripped: Args[0] is the program that runs. A call whose program is
	// not known (Args[0] not Known) may be any command; a call of one
	// Spread unknown word (eval "$x", bash -c "$x", a script nested too
	// deep) may be any command line.
	Args []Word
	// Wrappers are the names of the wrappers stripped, outermost first.
	Wrappers []string
	// Dir is the working directory the call runs in, as far as a static
	// cd in the line tells: the walk's starting directory, changed by
	// each cd to a known directory; "" where it cannot be known.
	Dir string
	// Pipe and Stage place the call in a pipeline: calls of one pipeline
	// (at any depth inside its stages) share Pipe (> 0) and Stage is the
	// index of their stage. A call outside any pipeline has Pipe 0.
	Pipe, Stage int
	// Text is the source of the call, as written in the command line or
	// in the string it was found in (bash -c '…').
	Text string
	// Unparsed reports a call that stands for the part of a script that
	// does not parse (one unknown word).
	Unparsed bool
}

// Program returns the base name of the program (/usr/bin/git is git)
// and whether it is known.
func (c *Call) Program() (string, bool) {
	if len(c.Args) == 0 {
		return "", false
	}
	return base(c.Args[0].Text), c.Args[0].Known
}

// Visitor receives what [Walk] finds. Either function may be nil.
type Visitor struct {
	// Call is called for every simple command, in the order of the text
	// (a function's body where it is called, or at the end if it is not).
	// The Call is the callee's until it returns.
	Call func(*Call)
	// Node is called for every node of every script parsed: the command
	// line and each string found to be a script in it (syntax.Walk order).
	Node func(syntax.Node) bool
}

// Walk parses cmd as a bash command line run in dir ("" when unknown) and
// calls v for every simple command it may run: in lists, pipelines,
// subshells, blocks, if/while/for/case, functions defined in the line
// (at their call with its arguments), command and process
// substitutions (in words, assignments, redirections and here-documents),
// the strings of bash -c / sh -c / su -c / eval / env -S / trap, a script
// fed to a shell as a here-document, a here-string or echo's output, and
// the commands of find -exec. Wrappers are stripped (Call.Args). A $VAR
// or ${VAR} is resolved where the line sets VAR statically before it
// (VAR=x, export VAR=x), and a cd to a known directory moves Call.Dir;
// what cannot be known is marked so (Word.Known). Scripts nested deeper
// than a few levels, and a command line that does not parse (beyond the
// part before the error), are reported as a call of one unknown word.
func Walk(cmd, dir string, v Visitor) {
	w := walker{v: v, funcs: map[string]fn{}, called: map[string]bool{}}
	sc := &scope{dir: dir, vars: map[string]string{}}
	w.script(cmd, sc, 0, 0, 0)
	w.uncalled(sc)
}

// WalkArgv calls v.Call for argv run without a shell in dir: one simple
// command, wrappers stripped, its strings for shells (bash -c …) walked
// as scripts.
func WalkArgv(argv []string, dir string, v Visitor) {
	w := walker{v: v, funcs: map[string]fn{}, called: map[string]bool{}}
	sc := &scope{dir: dir, vars: map[string]string{}}
	args := make([]Word, len(argv))
	for i, a := range argv {
		args[i] = Word{Text: a, Known: true}
	}
	w.words(args, strings.Join(argv, " "), sc, 0, 0, 0)
}

// fn is a function defined in the line, with the source it is in.
type fn struct {
	decl *syntax.FuncDecl
	src  string
}

type walker struct {
	v      Visitor
	pipes  int
	funcs  map[string]fn
	called map[string]bool
	stack  []string // functions being walked
	budget int      // function calls and alias uses walked so far (maxCalls)
	alias  map[string]Word
}

// maxCalls bounds the calls of functions and the uses of aliases defined
// in the line that are walked (each walks its body again, with its
// arguments); past it, a call is reported as a call of an unknown command
// line.
const maxCalls = 64

// scope is what the walk knows at a point of the line: the directory
// ("" unknown), the variables set statically (a name not in vars is
// unknown), and the positional parameters (nil: unknown).
type scope struct {
	dir    string
	vars   map[string]string
	params []Word
	known  bool // params are known
}

// sub returns a copy of sc for a subshell, whose changes do not come back.
func (sc *scope) sub() *scope {
	c := *sc
	c.vars = make(map[string]string, len(sc.vars))
	for k, v := range sc.vars {
		c.vars[k] = v
	}
	return &c
}

// pos is where a call sits: its pipeline and stage.
type pos struct{ pipe, stage int }

// unknownScript reports a call of one unknown word: any command line.
func (w *walker) unknownScript(sc *scope, p pos, text string) { w.opaque(sc, p, text, false) }

func (w *walker) opaque(sc *scope, p pos, text string, unparsed bool) {
	if w.v.Call != nil {
		w.v.Call(&Call{Args: []Word{{Text: "*", Spread: true}}, Dir: sc.dir, Pipe: p.pipe, Stage: p.stage,
			Text: text, Unparsed: unparsed})
	}
}

// script walks src, a shell program, at nesting depth.
func (w *walker) script(src string, sc *scope, depth, pipe, stage int) {
	p := pos{pipe, stage}
	if depth > maxDepth {
		w.unknownScript(sc, p, src)
		return
	}
	f, err := parse(src)
	if f == nil {
		w.opaque(sc, p, src, true)
		return
	}
	if w.v.Node != nil {
		syntax.Walk(f, w.v.Node)
	}
	w.stmts(f.Stmts, src, sc, depth, p, false)
	if err != nil {
		w.opaque(sc, p, src, true)
	}
}

// uncalled walks the bodies of the functions defined but never called,
// with unknown arguments.
func (w *walker) uncalled(sc *scope) {
	names := make([]string, 0, len(w.funcs))
	for name := range w.funcs {
		if !w.called[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		w.called[name] = true
		f := w.funcs[name]
		s := sc.sub()
		s.params, s.known = nil, false
		w.stmt(f.decl.Body, f.src, s, 1, pos{}, true)
	}
}

func (w *walker) stmts(list []*syntax.Stmt, src string, sc *scope, depth int, p pos, cond bool) {
	for _, s := range list {
		w.stmt(s, src, sc, depth, p, cond)
	}
}

// stmt walks one statement. cond reports whether it may or may not run
// (a branch, a loop body): what it sets is then unknown afterwards.
func (w *walker) stmt(s *syntax.Stmt, src string, sc *scope, depth int, p pos, cond bool) {
	if s == nil {
		return
	}
	if s.Background {
		// Runs in a subshell: its cd and assignments stay there.
		sc = sc.sub()
	}
	for _, r := range s.Redirs {
		w.word(r.Word, src, sc, depth, p)
		if r.Hdoc != nil {
			w.word(r.Hdoc, src, sc, depth, p)
		}
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(c, s, src, sc, depth, p, cond)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			w.pipes++
			id := w.pipes
			stages := pipeStages(c)
			for i, st := range stages {
				w.stmt(st, src, sc.sub(), depth, pos{id, i}, cond)
			}
			w.pipedScript(stages, src, sc, depth, id)
		default: // && ||: the right side may not run
			w.stmt(c.X, src, sc, depth, p, cond)
			w.stmt(c.Y, src, sc, depth, p, true)
		}
	case *syntax.Subshell:
		w.stmts(c.Stmts, src, sc.sub(), depth, p, cond)
	case *syntax.Block:
		w.stmts(c.Stmts, src, sc, depth, p, cond)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, src, sc, depth, p, cond || ic != c)
			w.stmts(ic.Then, src, sc, depth, p, true)
		}
	case *syntax.WhileClause:
		forget(c, sc)
		w.stmts(c.Cond, src, sc, depth, p, true)
		w.stmts(c.Do, src, sc, depth, p, true)
	case *syntax.ForClause:
		forget(c, sc)
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, it := range l.Items {
				w.word(it, src, sc, depth, p)
			}
		case *syntax.CStyleLoop:
			w.scan(l, src, sc, depth, p)
		}
		w.stmts(c.Do, src, sc, depth, p, true)
	case *syntax.CaseClause:
		w.word(c.Word, src, sc, depth, p)
		for _, it := range c.Items {
			for _, pat := range it.Patterns {
				w.word(pat, src, sc, depth, p)
			}
			w.stmts(it.Stmts, src, sc, depth, p, true)
		}
	case *syntax.FuncDecl:
		if c.Name != nil {
			w.funcs[c.Name.Value] = fn{c, src}
			delete(w.called, c.Name.Value)
		}
	case *syntax.DeclClause:
		for _, a := range c.Args {
			w.assign(a, src, sc, depth, p, cond)
		}
	case *syntax.TimeClause:
		w.stmt(c.Stmt, src, sc, depth, p, cond)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, src, sc.sub(), depth, p, cond)
	default: // (( )), [[ ]], let, test declarations: only their substitutions run
		if s.Cmd != nil {
			w.scan(s.Cmd, src, sc, depth, p)
		}
	}
	w.hereScript(s, src, sc, depth, p)
}

// pipeStages returns the stages of the pipeline b, in order.
func pipeStages(b *syntax.BinaryCmd) []*syntax.Stmt {
	if x, ok := b.X.Cmd.(*syntax.BinaryCmd); ok && !b.X.Negated && (x.Op == syntax.Pipe || x.Op == syntax.PipeAll) {
		return append(pipeStages(x), b.Y)
	}
	return []*syntax.Stmt{b.X, b.Y}
}

// forget makes unknown what a loop's body changes (its variables, the
// directory), since a later pass of the body sees the changes of an
// earlier one.
func forget(loop syntax.Node, sc *scope) {
	syntax.Walk(loop, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil {
				delete(sc.vars, n.Name.Value)
			}
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				if name, _ := unquote(n.Args[0]); name == "cd" || name == "pushd" || name == "popd" {
					sc.dir = ""
				}
			}
		case *syntax.WordIter:
			delete(sc.vars, n.Name.Value)
		}
		return true
	})
}

// scan walks the command and process substitutions inside n (in a
// subshell each) and nothing else.
func (w *walker) scan(n syntax.Node, src string, sc *scope, depth int, p pos) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			w.stmts(n.Stmts, src, sc.sub(), depth, p, false)
			return false
		case *syntax.ProcSubst:
			w.stmts(n.Stmts, src, sc.sub(), depth, p, false)
			return false
		}
		return true
	})
}

// word walks the substitutions of w.
func (w *walker) word(wd *syntax.Word, src string, sc *scope, depth int, p pos) {
	if wd != nil {
		w.scan(wd, src, sc, depth, p)
	}
}

// assign walks an assignment's substitutions and records its value.
func (w *walker) assign(a *syntax.Assign, src string, sc *scope, depth int, p pos, cond bool) {
	if a.Value != nil {
		w.word(a.Value, src, sc, depth, p)
	}
	if a.Array != nil {
		w.scan(a.Array, src, sc, depth, p)
	}
	if a.Name == nil || a.Naked {
		return
	}
	name := a.Name.Value
	if cond || a.Append || a.Index != nil || a.Array != nil || a.Value == nil {
		delete(sc.vars, name)
		return
	}
	v := expandOne(a.Value, sc)
	if !v.Known {
		delete(sc.vars, name)
		return
	}
	sc.vars[name] = v.Text
}

// text returns the source of n within src.
func text(n syntax.Node, src string) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(src) || a > b {
		return ""
	}
	return src[a:b]
}

// call walks a simple command.
func (w *walker) call(c *syntax.CallExpr, s *syntax.Stmt, src string, sc *scope, depth int, p pos, cond bool) {
	for _, a := range c.Assigns {
		if a.Value != nil {
			w.word(a.Value, src, sc, depth, p)
		}
		if a.Array != nil {
			w.scan(a.Array, src, sc, depth, p)
		}
	}
	for _, a := range c.Args {
		w.word(a, src, sc, depth, p)
	}
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			w.assign(a, src, sc, depth, p, cond)
		}
		return
	}
	var args []Word
	for _, a := range c.Args {
		args = append(args, expand(a, sc)...)
	}
	inner := sc
	if len(c.Assigns) > 0 {
		// VAR=x cmd: x is in cmd's environment, which a script it runs sees.
		inner = sc.sub()
		for _, a := range c.Assigns {
			w.assign(a, src, inner, depth, p, false)
		}
	}
	w.run(args, text(c, src), sc, inner, depth, p, cond)
}

// words walks a simple command given as its words (find -exec's, argv).
func (w *walker) words(args []Word, txt string, sc *scope, depth int, pipe, stage int) {
	w.run(args, txt, sc, sc, depth, pos{pipe, stage}, false)
}

// run reports the call of args and follows what it runs. sc is the
// shell's scope, env the one a script it starts inherits.
func (w *walker) run(args []Word, txt string, sc, env *scope, depth int, p pos, cond bool) {
	cmd, outer := unwrapWords(args)
	if len(cmd) == 0 {
		return
	}
	if slices.Contains(outer, "xargs") {
		cmd = append(cmd, Word{Text: "*", Spread: true}) // what xargs reads
	}
	call := &Call{Args: cmd, Wrappers: outer, Dir: sc.dir, Pipe: p.pipe, Stage: p.stage, Text: txt}
	if w.v.Call != nil {
		w.v.Call(call)
	}
	if !cmd[0].Known {
		return
	}
	name, rest := base(cmd[0].Text), cmd[1:]
	if a, ok := w.alias[cmd[0].Text]; ok && len(outer) == 0 {
		// An alias defined earlier in the line (bash expands them in a
		// script once shopt -s expand_aliases, and in a PTY's shell).
		if w.budget++; w.budget > maxCalls {
			w.unknownScript(sc, p, txt)
			return
		}
		w.nested(joinWords(append([]Word{a}, rest...)), nil, sc, depth, p)
	}
	switch name {
	case "alias":
		for _, a := range rest {
			if k, v, ok := strings.Cut(a.Text, "="); ok && k != "" && !strings.Contains(k, "*") {
				if w.alias == nil {
					w.alias = map[string]Word{}
				}
				w.alias[k] = Word{Text: v, Known: a.Known}
			}
		}
	case "source", ".":
		if len(rest) > 0 && !rest[0].Known {
			w.unknownScript(sc, p, txt)
		}
	case "cd", "pushd", "popd":
		w.cd(name, rest, sc, cond)
	case "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox":
		if name == "busybox" {
			if len(rest) == 0 || rest[0].Text != "sh" && rest[0].Text != "ash" {
				return
			}
			rest = rest[1:]
		}
		if script, params, ok := shellScriptWords(rest); ok {
			w.nested(script, params, env, depth, p)
		}
	case "su", "runuser":
		opts, _ := getopt{short: "cgGsw", long: []string{"command", "session-command",
			"group", "supp-group", "shell", "whitelist-environment"}}.parse(texts(rest))
		for _, v := range values(opts, "c", "command", "session-command") {
			w.nested(Word{Text: v, Known: allKnown(rest)}, nil, env, depth, p)
		}
	case "eval":
		w.nested(joinWords(rest), nil, sc, depth, p)
	case "trap":
		if len(rest) > 1 && rest[0].Text != "-" && !strings.HasPrefix(rest[0].Text, "-") {
			w.nested(rest[0], nil, sc, depth, p)
		}
	case "find":
		w.findExec(rest, txt, sc, depth, p)
	default:
		if f, ok := w.funcs[name]; ok && !slices.Contains(w.stack, name) && len(outer) == 0 {
			w.called[name] = true
			if w.budget++; w.budget > maxCalls {
				w.unknownScript(sc, p, txt)
				return
			}
			w.stack = append(w.stack, name)
			fs := sc // a function runs in the caller's shell
			saved, savedKnown := fs.params, fs.known
			fs.params, fs.known = rest, true
			w.stmt(f.decl.Body, f.src, fs, depth, p, cond)
			fs.params, fs.known = saved, savedKnown
			w.stack = w.stack[:len(w.stack)-1]
		}
	}
}

// nested walks a string that a command runs as a script, with its
// positional parameters (nil: none known).
func (w *walker) nested(script Word, params []Word, sc *scope, depth int, p pos) {
	if !script.Known {
		w.unknownScript(sc, p, script.Text)
		return
	}
	s := sc.sub()
	s.params, s.known = params, params != nil
	w.script(script.Text, s, depth+1, p.pipe, p.stage)
}

// cd follows a change of directory.
func (w *walker) cd(name string, args []Word, sc *scope, cond bool) {
	if cond || name == "popd" {
		sc.dir = ""
		return
	}
	var dir *Word
	for i := range args {
		a := args[i]
		if a.Known && a.Text == "--" {
			if i+1 < len(args) {
				dir = &args[i+1]
			}
			break
		}
		if a.Known && len(a.Text) > 1 && a.Text[0] == '-' {
			continue
		}
		dir = &a
		break
	}
	switch {
	case dir == nil || !dir.Known || dir.Text == "-" || dir.Text == "" || sc.vars["CDPATH"] != "":
		sc.dir = "" // home, the previous directory, a variable
	case strings.HasPrefix(dir.Text, "/"):
		sc.dir = path.Clean(dir.Text)
	case sc.dir != "":
		sc.dir = path.Join(sc.dir, dir.Text)
	}
}

// findExec reports the commands find runs with -exec, -execdir, -ok and
// -okdir, with {} unknown.
func (w *walker) findExec(args []Word, txt string, sc *scope, depth int, p pos) {
	for i := 0; i < len(args); i++ {
		switch args[i].Text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].Text != ";" && args[j].Text != "+" {
				j++
			}
			cmd := slices.Clone(args[i+1 : j])
			for k := range cmd {
				if strings.Contains(cmd[k].Text, "{}") {
					cmd[k] = Word{Text: strings.ReplaceAll(cmd[k].Text, "{}", "*")}
				}
			}
			if depth < maxDepth {
				s := sc.sub()
				s.dir = ""
				w.run(cmd, txt, s, s, depth+1, p, false)
			}
			i = j
		}
	}
}

// hereScript walks the here-document or here-string fed to a shell that
// reads its script from stdin (bash <<'EOF' … EOF, sh <<< '…').
func (w *walker) hereScript(s *syntax.Stmt, src string, sc *scope, depth int, p pos) {
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(s.Redirs) == 0 || len(c.Args) == 0 {
		return
	}
	var args []Word
	for _, a := range c.Args {
		args = append(args, expand(a, sc)...)
	}
	if !shellFromStdin(args) {
		return
	}
	for _, r := range s.Redirs {
		var body *syntax.Word
		switch {
		case (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) && r.Hdoc != nil:
			body = r.Hdoc
		case r.Op == syntax.WordHdoc:
			body = r.Word
		default:
			continue
		}
		w.nested(expandOne(body, sc), nil, sc, depth, p)
	}
}

// shellFromStdin reports whether args run a shell that reads its script
// from stdin (unknown: may).
func shellFromStdin(args []Word) bool {
	cmd, _ := unwrapWords(args)
	if len(cmd) == 0 || !cmd[0].Known {
		return false
	}
	name, rest := base(cmd[0].Text), cmd[1:]
	if name == "busybox" && len(rest) > 0 && (rest[0].Text == "sh" || rest[0].Text == "ash") {
		name, rest = "sh", rest[1:]
	}
	if (name == "source" || name == ".") && len(rest) > 0 {
		switch rest[0].Text {
		case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
			return true
		}
	}
	return shells[name] && readsStdin(texts(rest))
}

// pipedScript walks the output of echo or printf piped into a shell that
// reads its script from stdin (echo 'rm -rf x' | sh).
func (w *walker) pipedScript(stages []*syntax.Stmt, src string, sc *scope, depth, id int) {
	for i := 1; i < len(stages); i++ {
		dst, ok := stages[i].Cmd.(*syntax.CallExpr)
		if !ok || len(dst.Args) == 0 {
			continue
		}
		var dargs []Word
		for _, a := range dst.Args {
			dargs = append(dargs, expand(a, sc)...)
		}
		if !shellFromStdin(dargs) {
			continue
		}
		// What the shell reads: echo's or printf's words when they are
		// known, else unknown (generated, downloaded, decoded).
		script, alt := Word{Text: "*"}, Word{}
		if c, ok := stages[i-1].Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 && !stages[i-1].Negated {
			var args []Word
			for _, a := range c.Args {
				args = append(args, expand(a, sc)...)
			}
			args, _ = unwrapWords(args)
			if len(args) > 0 && args[0].Known {
				rest := args[1:]
				for len(rest) > 0 && rest[0].Known && strings.HasPrefix(rest[0].Text, "-") && rest[0].Text != "-" {
					rest = rest[1:]
				}
				switch base(args[0].Text) {
				case "echo":
					// bash's echo prints backslashes as they are, dash's
					// (and echo -e) decodes them: both are walked.
					script = joinWords(rest)
					if script.Known && ansiC(script.Text) != script.Text {
						alt = Word{Text: ansiC(script.Text), Known: true}
					}
				case "printf":
					if j := joinWords(rest); j.Known && !strings.Contains(j.Text, "%") {
						script = Word{Text: ansiC(j.Text), Known: true}
					}
				}
			}
		}
		w.nested(script, nil, sc, depth, pos{id, i})
		if alt.Known {
			w.nested(alt, nil, sc, depth, pos{id, i})
		}
	}
}

// shellScriptWords returns the script of sh-like arguments that use -c
// and the positional parameters after it ($0 first); a script file that
// is not known (bash <(curl …), sh "$f") is an unknown script.
func shellScriptWords(args []Word) (Word, []Word, bool) {
	c := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.Known {
			// The script (with -c) or the script file is not known:
			// either way what runs is not.
			return Word{Text: a.Text}, nil, true
		}
		t := a.Text
		switch {
		case t == "--" || t == "-":
			if i+1 < len(args) && (c || !args[i+1].Known) {
				return args[i+1], params(args[i+2:]), true
			}
			return Word{}, nil, false
		case strings.HasPrefix(t, "--"):
			if t == "--rcfile" || t == "--init-file" {
				i++
			}
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			if strings.Contains(t, "c") {
				c = true
			}
			if strings.ContainsAny(t, "oO") {
				i++
			}
		default:
			if !c {
				return Word{}, nil, false
			}
			return a, params(args[i+1:]), true
		}
	}
	return Word{}, nil, false
}

// params are the positional parameters of sh -c SCRIPT $0 $1…: without $0.
func params(args []Word) []Word {
	if len(args) == 0 {
		return []Word{}
	}
	return args[1:]
}

func texts(ws []Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Text
	}
	return out
}

func allKnown(ws []Word) bool {
	for _, w := range ws {
		if !w.Known {
			return false
		}
	}
	return true
}

// joinWords joins words with spaces, as eval does.
func joinWords(ws []Word) Word {
	return Word{Text: strings.Join(texts(ws), " "), Known: allKnown(ws)}
}

// unwrapWords is unwrap for words: the wrappers are recognized by their
// text (an unknown word is no wrapper and ends the stripping).
func unwrapWords(args []Word) ([]Word, []string) {
	n := len(args)
	for i, a := range args {
		if !a.Known {
			n = i
			break
		}
	}
	cmd, outer := unwrap(texts(args[:n]))
	if len(outer) == 0 {
		return args, nil
	}
	if cmd == nil && n == len(args) {
		return nil, outer
	}
	// unwrap returns a tail of its input, or new words (env -S, xargs' echo).
	if len(cmd) <= n && slices.Equal(cmd, texts(args[n-len(cmd):n])) {
		return args[n-len(cmd):], outer
	}
	out := make([]Word, 0, len(cmd)+len(args)-n)
	for _, t := range cmd {
		out = append(out, Word{Text: t, Known: true})
	}
	return append(out, args[n:]...), outer
}

// expandOne expands w as one word, as an assignment's value or a
// here-document is: no field splitting, no globbing.
func expandOne(w *syntax.Word, sc *scope) Word {
	var b strings.Builder
	known := true
	for _, part := range w.Parts {
		t, k := partText(part, sc, true)
		b.WriteString(t)
		known = known && k
	}
	return Word{Text: b.String(), Known: known}
}

// partText is a word part's value quoted (no splitting): its text, or its
// pattern and false.
func partText(part syntax.WordPart, sc *scope, quoted bool) (string, bool) {
	switch p := part.(type) {
	case *syntax.Lit:
		if quoted {
			return unescape(p.Value, true), true
		}
		return unescape(p.Value, false), true
	case *syntax.SglQuoted:
		if p.Dollar {
			return ansiC(p.Value), true
		}
		return p.Value, true
	case *syntax.DblQuoted:
		var b strings.Builder
		known := true
		for _, in := range p.Parts {
			if l, ok := in.(*syntax.Lit); ok {
				b.WriteString(unescape(l.Value, true))
				continue
			}
			t, k := partText(in, sc, true)
			b.WriteString(t)
			known = known && k
		}
		return b.String(), known
	case *syntax.ParamExp:
		if v, ok := param(p, sc); ok && len(v) == 1 {
			return v[0], true
		}
		return "*", false
	}
	return "*", false
}

// param returns the value of a plain $NAME or ${NAME} when known, as
// words for "$@" (each positional parameter).
func param(p *syntax.ParamExp, sc *scope) ([]string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Names != 0 || p.Exp != nil || p.NestedParam != nil || len(p.Modifiers) > 0 {
		return nil, false
	}
	name := p.Param.Value
	switch {
	case name == "@" || name == "*":
		if !sc.known || !allKnown(sc.params) {
			return nil, false
		}
		t := texts(sc.params)
		if name == "*" {
			return []string{strings.Join(t, " ")}, true
		}
		return t, true
	case name == "#":
		if !sc.known {
			return nil, false
		}
		return []string{strconv.Itoa(len(sc.params))}, true
	case len(name) > 0 && name[0] >= '1' && name[0] <= '9':
		n, err := strconv.Atoi(name)
		if err != nil || !sc.known {
			return nil, false
		}
		if n > len(sc.params) {
			return []string{""}, true
		}
		if !sc.params[n-1].Known {
			return nil, false
		}
		return []string{sc.params[n-1].Text}, true
	}
	v, ok := sc.vars[name]
	if !ok || name == "IFS" {
		return nil, false
	}
	return []string{v}, true
}

// expand expands a word of a command into the words it becomes: quote
// removal, the known parameters substituted (split on blanks where not
// quoted), the rest marked unknown.
func expand(w *syntax.Word, sc *scope) []Word {
	var out []Word
	var cur strings.Builder
	known, spread, has := true, false, false
	flush := func() {
		if has {
			out = append(out, Word{Text: cur.String(), Known: known, Spread: spread && !known})
		}
		cur.Reset()
		known, spread, has = true, false, false
	}
	_, ifs := sc.vars["IFS"]
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			t, k, sp := literal(p.Value, i == 0)
			cur.WriteString(t)
			known, spread, has = known && k, spread || sp, true
		case *syntax.ParamExp:
			v, ok := param(p, sc)
			if !ok || ifs {
				cur.WriteString("*")
				known, spread, has = false, true, true
				continue
			}
			for j, val := range v {
				if j > 0 {
					flush()
				}
				for k, f := range strings.Fields(val) {
					if k > 0 {
						flush()
					}
					if unescaped(f, "*?[") {
						known = false
						f = globPattern(f)
					}
					cur.WriteString(f)
					has = true
				}
			}
		case *syntax.DblQuoted:
			if len(p.Parts) == 1 {
				if pe, ok := p.Parts[0].(*syntax.ParamExp); ok && pe.Param != nil && pe.Param.Value == "@" {
					if v, ok := param(pe, sc); ok {
						for j, val := range v {
							if j > 0 {
								flush()
							}
							cur.WriteString(val)
							has = true
						}
						continue
					}
					cur.WriteString("*")
					known, spread, has = false, true, true
					continue
				}
			}
			t, k := partText(p, sc, true)
			cur.WriteString(t)
			known, has = known && k, true
		case *syntax.SglQuoted:
			t, k := partText(p, sc, true)
			cur.WriteString(t)
			known, has = known && k, true
		default: // substitutions, arithmetic, extended globs
			cur.WriteString("*")
			known, has = false, true
			if _, arith := p.(*syntax.ArithmExp); !arith {
				spread = true
			}
		}
	}
	flush()
	return out
}

// literal removes the quoting of an unquoted literal and tells whether it
// is its value: an unescaped glob (* ? […]), a brace expansion or a
// leading tilde makes it a pattern ("*" in their place). A glob or a
// brace may become several words, each of the pattern's shape: none of
// them spreads into arbitrary words, so spread is always false.
func literal(s string, first bool) (text string, known, spread bool) {
	if !strings.ContainsAny(s, `\*?[{~`) {
		return s, true, false
	}
	var b strings.Builder
	known = true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
		case c == '*' || c == '?':
			b.WriteByte('*')
			known = false
		case c == '[' && strings.IndexByte(s[i+1:], ']') >= 0:
			b.WriteByte('*')
			i += 1 + strings.IndexByte(s[i+1:], ']')
			known = false
		case c == '{' && strings.IndexByte(s[i+1:], '}') >= 0 &&
			(strings.Contains(s[i:], ",") || strings.Contains(s[i:], "..")):
			b.WriteByte('*')
			i += 1 + strings.IndexByte(s[i+1:], '}')
			known = false
		case c == '~' && i == 0 && first:
			j := strings.IndexByte(s, '/')
			if j < 0 {
				j = len(s)
			}
			b.WriteByte('*')
			i = j - 1
			known = false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), known, spread
}

// globPattern is a glob with its ? and […] as *.
func globPattern(s string) string {
	t, _, _ := literal(s, false)
	return t
}

// ansiC decodes the backslash escapes of $'…' (and of printf's format).
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			for j < len(s) && j-i-1 < max && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default: // \\ \' \" \? and unknown escapes
			if e != '\\' && e != '\'' && e != '"' && e != '?' {
				b.WriteByte('\\')
			}
			b.WriteByte(e)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
