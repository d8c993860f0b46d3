// Package policy decides whether a command may run: the operator's deny
// rules refuse it, the warn rules and the built-in destructive warnings
// (shell.Warning) only say so.
//
// A rule is a list of words: the first is a program, matched by base name
// (/usr/bin/git is git); a later word that starts with - must be among
// the command's options (short clusters split: -rf is -r -f; for rm
// --recursive, -r and -R are one, --force and -f are one; for git push,
// --force and -f); any other word is a glob (* within a word matches any
// text, / included) that must match an argument, in order, where an
// argument is also tried in its absolute form against the working
// directory the command runs in. A rule of stages joined by | matches a
// pipeline whose stages match them in order ("curl | sh").
//
// A rule is matched against every simple command the command line may run,
// as shell.Walk sees them. A command part of which cannot be known before
// it runs (its program, or a word a deny rule needs) is refused when a
// deny rule could match it, unless the Policy allows such commands.
//
// This is a guardrail against an agent's mistakes, not a sandbox: what a
// program does once started (a script file, a Makefile, a PTY's shell) is
// beyond it.
package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/shell"
)

// Rule is one parsed rule. Make it with ParseRule.
type Rule struct {
	text   string
	stages []stage
}

// String returns the rule as written.
func (r Rule) String() string { return r.text }

// stage is one command of a rule: a program, options, globs.
type stage struct {
	program string
	opts    []option
	globs   []string
	aliases map[string]string // option spelling -> canonical spelling
}

// option is a rule's option word: as written, and, for a short cluster
// (-rf), its letters (each required).
type option struct {
	word    string
	letters []string
}

// aliases are the spellings of the built-in set's options taken as one,
// by program (and git's subcommand).
var aliases = map[string]map[string]string{
	"rm":       {"-r": "--recursive", "-R": "--recursive", "--recursive": "--recursive", "-f": "--force", "--force": "--force"},
	"git push": {"-f": "--force", "--force": "--force"},
}

// ParseRule parses a rule. An error names the rule and what is wrong.
func ParseRule(s string) (Rule, error) {
	r := Rule{text: strings.Join(strings.Fields(s), " ")}
	if r.text == "" {
		return Rule{}, fmt.Errorf("policy rule %q: empty", s)
	}
	for i, part := range strings.Split(s, "|") {
		words := strings.Fields(part)
		if len(words) == 0 {
			return Rule{}, fmt.Errorf("policy rule %q: stage %d of the pipeline is empty", s, i+1)
		}
		st := stage{program: path.Base(words[0])}
		if strings.HasPrefix(words[0], "-") || st.program == "." || st.program == "/" {
			return Rule{}, fmt.Errorf("policy rule %q: %q is no program (a rule starts with the program's name)", s, words[0])
		}
		for _, w := range words[1:] {
			if strings.HasPrefix(w, "-") && w != "-" {
				if w == "--" {
					return Rule{}, fmt.Errorf("policy rule %q: -- is no option", s)
				}
				st.opts = append(st.opts, ruleOption(w))
				continue
			}
			st.globs = append(st.globs, w)
		}
		key := st.program
		if len(st.globs) > 0 {
			if _, ok := aliases[key+" "+st.globs[0]]; ok {
				key += " " + st.globs[0]
			}
		}
		st.aliases = aliases[key]
		r.stages = append(r.stages, st)
	}
	return r, nil
}

func ruleOption(w string) option {
	o := option{word: w}
	if !strings.HasPrefix(w, "--") && len(w) > 2 {
		for _, c := range w[1:] {
			o.letters = append(o.letters, "-"+string(c))
		}
	}
	return o
}

// Options configure a Policy.
type Options struct {
	// Deny and Warn are rules (ParseRule). A deny rule refuses a command
	// that matches it; a warn rule adds to its warning.
	Deny, Warn []string
	// AllowUnknown lets a command run when part of it cannot be known
	// before it runs and a deny rule could match it. If false (the zero
	// value), such a command is refused.
	AllowUnknown bool
}

// Policy is a set of rules. The zero value and nil have no rules (and
// still give the built-in warnings). Safe for concurrent use.
type Policy struct {
	deny, warn   []Rule
	allowUnknown bool
}

// New parses the rules of o. An error names the first rule that does not
// parse.
func New(o Options) (*Policy, error) {
	p := &Policy{allowUnknown: o.AllowUnknown}
	for _, list := range []struct {
		src []string
		dst *[]Rule
	}{{o.Deny, &p.deny}, {o.Warn, &p.warn}} {
		for _, s := range list.src {
			r, err := ParseRule(s)
			if err != nil {
				return nil, err
			}
			*list.dst = append(*list.dst, r)
		}
	}
	return p, nil
}

// Empty reports whether p has no rules.
func (p *Policy) Empty() bool { return p == nil || len(p.deny) == 0 && len(p.warn) == 0 }

// Decision is what a Policy says of a command.
type Decision struct {
	// Refused reports that the command must not run; Rule is the deny
	// rule and Part the part of the command that matched it.
	Refused    bool
	Rule, Part string
	// Unknown reports a refusal because Part cannot be known before it
	// runs and Rule could match it.
	Unknown bool
	// Warning is the built-in warnings and the warn rules matched, joined
	// by "; ", or "".
	Warning string
}

// Err returns the refusal as an error of class errdefs.ErrPolicy, or nil
// when the command may run. Its text holds "policy", the rule and the part.
func (d Decision) Err() error {
	if !d.Refused {
		return nil
	}
	if d.Unknown {
		return errdefs.Newf(errdefs.ErrPolicy, "refused by policy: deny rule %q could match %q, part of which cannot be known before it runs (a variable, a substitution, a glob, a script in a string); the operator allows such commands with --policy-refuse-unknown=false",
			d.Rule, clip(d.Part))
	}
	return errdefs.Newf(errdefs.ErrPolicy, "refused by policy: deny rule %q matches %q", d.Rule, clip(d.Part))
}

// clip shortens a part for an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Check decides on cmd, a bash command line run in dir (absolute; "" when
// not known).
func (p *Policy) Check(cmd, dir string) Decision {
	return p.check(dir, false, func(v shell.Visitor) { shell.Walk(cmd, dir, v) })
}

// CheckArgv decides on argv run without a shell in dir: one simple
// command.
func (p *Policy) CheckArgv(argv []string, dir string) Decision {
	return p.check(dir, false, func(v shell.Visitor) { shell.WalkArgv(argv, dir, v) })
}

// CheckInput decides on text typed into a terminal (a PTY's shell or a
// program in it) as Check does, except that what does not parse as bash
// (a REPL's input) is let through: best effort.
func (p *Policy) CheckInput(input, dir string) Decision {
	return p.check(dir, true, func(v shell.Visitor) { shell.Walk(input, dir, v) })
}

func (p *Policy) check(dir string, input bool, walk func(shell.Visitor)) Decision {
	var w shell.Warner
	var calls []shell.Call
	walk(shell.Visitor{Node: w.Node, Call: func(c *shell.Call) {
		w.Call(c)
		if !(input && c.Unparsed) && (p != nil && len(p.deny)+len(p.warn) > 0) {
			calls = append(calls, *c)
		}
	}})
	var d Decision
	var warnings []string
	if s := w.String(); s != "" {
		warnings = append(warnings, s)
	}
	if p != nil {
		var maybe *Decision
		for _, r := range p.deny {
			m, part := r.match(calls)
			if m == definite {
				d.Refused, d.Rule, d.Part = true, r.text, part
				break
			}
			if m == possible && maybe == nil && !p.allowUnknown {
				maybe = &Decision{Refused: true, Unknown: true, Rule: r.text, Part: part}
			}
		}
		if !d.Refused && maybe != nil {
			d = *maybe
		}
		for _, r := range p.warn {
			if m, part := r.match(calls); m == definite {
				warnings = append(warnings, fmt.Sprintf("matches warn rule %q (%s)", r.text, clip(part)))
			}
		}
	}
	d.Warning = strings.Join(warnings, "; ")
	return d
}

// outcome is how a rule matches: not, possibly (were the unknown parts
// what the rule needs), or definitely.
type outcome int

const (
	none outcome = iota
	possible
	definite
)

// match matches r against the calls of a command line and returns the
// best outcome and the part that gave it.
func (r Rule) match(calls []shell.Call) (outcome, string) {
	best, part := none, ""
	if len(r.stages) == 1 {
		for i := range calls {
			if m := r.stages[0].match(&calls[i]); m > best {
				best, part = m, partOf(&calls[i])
				if m == definite {
					break
				}
			}
		}
		return best, part
	}
	// A pipeline: the stages in order, in one pipeline. A call that may be
	// any command line may hold the whole pipeline.
	for i := range calls {
		if opaque(&calls[i]) {
			best, part = possible, partOf(&calls[i])
			break
		}
	}
	pipes := map[int][]int{}
	var order []int
	for i := range calls {
		if id := calls[i].Pipe; id > 0 {
			if _, ok := pipes[id]; !ok {
				order = append(order, id)
			}
			pipes[id] = append(pipes[id], i)
		}
	}
	for _, id := range order {
		for _, want := range []outcome{definite, possible} {
			if want <= best {
				break
			}
			if parts, ok := r.pipeline(calls, pipes[id], want); ok {
				best, part = want, strings.Join(parts, " | ")
			}
		}
		if best == definite {
			break
		}
	}
	return best, part
}

// pipeline matches r's stages in order against the calls idx of one
// pipeline, each at least as well as want.
func (r Rule) pipeline(calls []shell.Call, idx []int, want outcome) ([]string, bool) {
	var parts []string
	prev := -1
	k := 0
	for _, i := range idx {
		if k == len(r.stages) {
			break
		}
		c := &calls[i]
		if c.Stage <= prev {
			continue
		}
		if r.stages[k].match(c) >= want {
			parts = append(parts, partOf(c))
			prev = c.Stage
			k++
		}
	}
	return parts, k == len(r.stages)
}

// partOf is the part of a command line a call is: its text, and the words
// it runs when they read otherwise (a variable resolved, an alias, the
// wrappers stripped): git push $F (runs: git push --force).
func partOf(c *shell.Call) string {
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		if !w.Known {
			return c.Text
		}
		words[i] = w.Text
	}
	run := strings.Join(words, " ")
	if strings.HasSuffix(c.Text, run) {
		return c.Text
	}
	return c.Text + " (runs: " + run + ")"
}

// opaque reports whether c may be any command line (eval "$x").
func opaque(c *shell.Call) bool {
	return len(c.Args) > 0 && !c.Args[0].Known && c.Args[0].Spread
}

// token is an argument of a call: an option, an operand, or unknown
// (either, maybe several).
type token struct {
	w   shell.Word
	opt bool
	// abs is an operand's absolute form (abs), absKnown whether it is
	// known, set when the stage has globs.
	abs      string
	absKnown bool
}

// match matches one stage against one call.
func (s *stage) match(c *shell.Call) outcome {
	if len(c.Args) == 0 {
		return none
	}
	m := definite
	args := c.Args[1:]
	if p := c.Args[0]; p.Known {
		if !glob(s.program, path.Base(p.Text)) {
			return none
		}
	} else {
		m = possible
		prog := p.Text
		if p.Spread {
			// The word may split: the program is its start, up to the
			// first unknown part and some of it (git${IFS}push).
			prog = prog[:strings.IndexByte(prog, '*')+1]
			args = c.Args // the program's arguments may be in it too
		}
		if !overlap(s.program, lastElem(prog)) {
			return none
		}
	}
	var toks []token
	ended := false
	for _, a := range args {
		switch {
		case !a.Known:
			toks = append(toks, token{w: a})
		case !ended && a.Text == "--":
			ended = true
		case !ended && len(a.Text) > 1 && a.Text[0] == '-':
			toks = append(toks, token{w: a, opt: true})
		default:
			toks = append(toks, token{w: a})
		}
	}
	for _, o := range s.opts {
		m = min(m, s.hasOption(o, toks))
		if m == none {
			return none
		}
	}
	if len(s.globs) > 0 {
		for i := range toks {
			if !toks[i].opt {
				toks[i].abs, toks[i].absKnown = abs(toks[i].w.Text, c.Dir)
			}
		}
	}
	return min(m, s.operands(toks))
}

// lastElem is the last element of a path pattern.
func lastElem(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// hasOption tells whether the options among toks hold o.
func (s *stage) hasOption(o option, toks []token) outcome {
	if s.hasOne(o.word, toks) == definite {
		return definite
	}
	best := s.hasOne(o.word, toks)
	if len(o.letters) > 0 {
		all := definite
		for _, l := range o.letters {
			all = min(all, s.hasOne(l, toks))
		}
		best = max(best, all)
	}
	return best
}

// canon is the canonical spelling of an option.
func (s *stage) canon(o string) string {
	if c, ok := s.aliases[o]; ok {
		return c
	}
	return o
}

// hasOne tells whether toks hold the option o (one word: -f, --force,
// -delete).
func (s *stage) hasOne(o string, toks []token) outcome {
	want := s.canon(o)
	best := none
	for _, t := range toks {
		if !t.w.Known {
			// A word that may split may hold any word.
			if t.w.Spread || overlap("-*", t.w.Text) {
				best = possible
			}
			continue
		}
		if !t.opt {
			continue
		}
		a := t.w.Text
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			if s.canon(name) == want || s.longPrefix(name, want) {
				return definite
			}
			continue
		}
		if a == o || s.canon(a) == want {
			return definite
		}
		for _, c := range a[1:] {
			if s.canon("-"+string(c)) == want {
				return definite
			}
		}
	}
	return best
}

// longPrefix reports whether name (--rec) abbreviates a long spelling of
// want (--recursive), as GNU and git's option parsers accept.
func (s *stage) longPrefix(name, want string) bool {
	if len(name) < 3 {
		return false
	}
	if strings.HasPrefix(want, "--") && strings.HasPrefix(want, name) {
		return true
	}
	for spelling, c := range s.aliases {
		if c == want && strings.HasPrefix(spelling, "--") && strings.HasPrefix(spelling, name) {
			return true
		}
	}
	return false
}

// operands matches the globs in order against the operands among toks.
func (s *stage) operands(toks []token) outcome {
	if len(s.globs) == 0 {
		return definite
	}
	if seq(s.globs, toks, definite) {
		return definite
	}
	if seq(s.globs, toks, possible) {
		return possible
	}
	return none
}

// seq matches globs in order against toks, each token matching at least
// as well as want; a spreading token may match several globs.
func seq(globs []string, toks []token, want outcome) bool {
	k := 0
	for _, t := range toks {
		if t.opt {
			continue
		}
		for k < len(globs) && arg(globs[k], t) >= want {
			k++
			if !t.w.Spread {
				break
			}
		}
		if k == len(globs) {
			return true
		}
	}
	return k == len(globs)
}

// arg matches a glob against an operand: as written, and in its absolute
// form.
func arg(g string, t token) outcome {
	w := t.w
	if w.Known {
		if glob(g, w.Text) {
			return definite
		}
		if t.absKnown && glob(g, t.abs) {
			return definite
		}
		if !t.absKnown && overlap(g, t.abs) {
			return possible
		}
		return none
	}
	if w.Spread || overlap(g, w.Text) || overlap(g, t.abs) {
		return possible // a word that may split may hold any word
	}
	return none
}

// abs returns p's absolute form against dir, cleaned, and whether it is
// known: with dir unknown a relative path is a pattern ("*/p"); a pattern
// with .. in it could be anywhere ("*").
func abs(p, dir string) (string, bool) {
	pattern := strings.Contains(p, "*")
	if pattern && slices.Contains(strings.Split(p, "/"), "..") {
		return "*", false
	}
	switch {
	case strings.HasPrefix(p, "/"):
		return path.Clean(p), !pattern
	case dir == "":
		if slices.Contains(strings.Split(p, "/"), "..") {
			return "*", false
		}
		return path.Clean("*/" + p), false
	}
	return path.Join(dir, p), !pattern
}

// glob reports whether s matches the pattern g, where * matches any text
// (/ included) and every other byte itself.
func glob(g, s string) bool {
	// The classic two-pointer match with backtracking to the last *.
	gi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case gi < len(g) && g[gi] == '*':
			star, mark = gi, si
			gi++
		case gi < len(g) && g[gi] == s[si]:
			gi++
			si++
		case star >= 0:
			gi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for gi < len(g) && g[gi] == '*' {
		gi++
	}
	return gi == len(g)
}

// overlap reports whether some text matches both patterns (each * any
// text).
func overlap(a, b string) bool {
	if !strings.Contains(b, "*") {
		return glob(a, b)
	}
	if !strings.Contains(a, "*") {
		return glob(b, a)
	}
	// memo[i][j]: a[i:] and b[j:] have a common match.
	memo := make(map[[2]int]bool)
	var f func(i, j int) bool
	f = func(i, j int) bool {
		k := [2]int{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(a) && j == len(b):
			r = true
		case i < len(a) && a[i] == '*':
			r = f(i+1, j) || j < len(b) && f(i, j+1)
		case j < len(b) && b[j] == '*':
			r = f(i, j+1) || i < len(a) && f(i+1, j)
		case i < len(a) && j < len(b) && a[i] == b[j]:
			r = f(i+1, j+1)
		}
		memo[k] = r
		return r
	}
	return f(0, 0)
}
