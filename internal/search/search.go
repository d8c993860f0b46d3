// Package search implements content search (Grep) and file globbing (Glob)
// behind the terminal_rg and terminal_glob tools.
//
// Grep has two engines that give the same results on the same tree: the rg
// binary (GrepRG), used when it is on PATH, and a built-in Go engine
// (GrepBuiltin) that follows ripgrep's rules: ignore files (.gitignore only
// inside a git repository, .ignore, .rgignore, .git/info/exclude, also in
// the directories above the searched path), hidden files, binary files,
// symlinks, --glob and --type precedence. Results are sorted by path, then
// line, so that truncation keeps the same first matches in both engines.
//
// All functions are safe for concurrent use. Bad input comes back as an
// *InputError naming the offending field.
package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// Default limits, used when MaxResults is zero, and the largest Context.
const (
	DefaultMaxResults     = 200
	DefaultGlobMaxResults = 500
	MaxContext            = 1000
)

// Engine names reported in Result.Engine.
const (
	EngineRG      = "rg"
	EngineBuiltin = "builtin"
)

// Options configures Grep.
type Options struct {
	// Pattern is a regular expression (the RE2 syntax shared by Go and Rust;
	// \w, \d and \s are Unicode-aware as in ripgrep, \b is ASCII) or, with
	// FixedStrings, a literal. A pattern never matches across lines, and
	// may not contain a newline. The empty pattern matches every line.
	Pattern string `json:"pattern"`
	// Dir is the absolute working directory: a relative Path, the --glob
	// patterns and the reported paths are relative to it.
	Dir string `json:"-"`
	// Path is the file or directory to search, absolute or relative to Dir.
	// If Path is empty, Dir is searched. A file named here is searched even
	// if ignored, hidden or binary, as rg does.
	Path string `json:"path,omitempty"`
	// Globs are rg --glob filters, matched against paths relative to Dir
	// with gitignore syntax; a leading '!' excludes. If any glob is not
	// negated, only files matching one are searched. A matching glob
	// overrides ignore files and hidden-file skipping.
	Globs []string `json:"glob,omitempty"`
	// Type restricts the search to one file type (see Types). If Type is
	// empty, every file type is searched.
	Type string `json:"type,omitempty"`
	// IgnoreCase matches case-insensitively (Unicode simple case folding).
	IgnoreCase bool `json:"ignore_case,omitempty"`
	// FixedStrings treats Pattern as a literal string.
	FixedStrings bool `json:"fixed_strings,omitempty"`
	// Context is the number of lines reported before and after each match.
	Context int `json:"context,omitempty"`
	// MaxResults caps the number of matches; if zero, DefaultMaxResults.
	MaxResults int `json:"max_results,omitempty"`
	// MaxCount caps the matches reported per file, as rg --max-count; if
	// zero, there is no cap. A file's matches past it do not make the
	// result Truncated.
	MaxCount int `json:"max_count,omitempty"`
	// Hidden searches hidden files and directories (the .git directory is
	// always skipped).
	Hidden bool `json:"hidden,omitempty"`
	// NoIgnore disables .gitignore, .ignore, .rgignore and
	// .git/info/exclude rules.
	NoIgnore bool `json:"no_ignore,omitempty"`
}

// Line is one line of a file.
type Line struct {
	Line int    `json:"line"` // 1-based
	Text string `json:"text"` // without the line terminator; invalid UTF-8 replaced by U+FFFD
}

// Match is one matching line.
type Match struct {
	// Path is absolute when Options.Path is, else relative to Options.Dir
	// (without a leading "./"), as rg prints it.
	Path   string `json:"path"`
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based byte column of the first match in the line
	Text   string `json:"text"`   // the line, as in Line.Text
	// Before and After hold up to Options.Context lines around the match,
	// whether or not they match themselves, or another match shows them
	// too (terminal_rg merges the context of a file's matches, as rg
	// -C does). Nil when Context is zero.
	Before []Line `json:"before,omitempty"`
	After  []Line `json:"after,omitempty"`
}

// Result is the outcome of Grep.
type Result struct {
	// Matches are sorted by path (component by component), then line: the
	// first MaxResults matches in that order.
	Matches []Match `json:"matches"`
	// Count is len(Matches).
	Count int `json:"count"`
	// Truncated reports that more than MaxResults lines matched.
	Truncated bool `json:"truncated"`
	// Engine is EngineRG or EngineBuiltin.
	Engine string `json:"engine"`
}

// InputError reports an option that breaks a rule. Field is the option's
// tool-argument name ("pattern", "path", "glob", "type", "context",
// "max_results", "dir").
type InputError struct {
	Field  string
	Reason string
	Err    error // the underlying error, if any
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

func (e *InputError) Unwrap() error { return e.Err }

// Grep searches with rg when it is on PATH, else with the built-in engine.
// If rg fails for another reason than bad input (it cannot start, or dies),
// the built-in engine answers instead.
func Grep(ctx context.Context, o Options) (Result, error) {
	if rg, err := exec.LookPath("rg"); err == nil {
		res, err := GrepRG(ctx, rg, o)
		var ie *InputError
		if err == nil || errors.As(err, &ie) || ctx.Err() != nil {
			return res, err
		}
	}
	return GrepBuiltin(ctx, o)
}

// grepPlan is validated Options, shared by both engines.
type grepPlan struct {
	o       Options
	root    string // absolute clean path searched
	rootDir bool
	limit   int
	pat     *compiledPattern
	over    *ignoreRules // --glob overrides, in gitignore form (verdicts inverted)
	types   *typeFilter
	// base is root as reported: absolute when Options.Path is, else
	// relative to Dir ("" when root is Dir); slash-separated.
	base string
}

func newGrepPlan(o Options) (*grepPlan, error) {
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		return nil, &InputError{Field: "dir", Reason: fmt.Sprintf("%q is not an absolute path", o.Dir)}
	}
	if o.MaxResults < 0 {
		return nil, &InputError{Field: "max_results", Reason: "must be >= 0"}
	}
	if o.MaxCount < 0 {
		return nil, &InputError{Field: "max_count", Reason: "must be >= 0"}
	}
	if o.Context < 0 || o.Context > MaxContext {
		return nil, &InputError{Field: "context", Reason: fmt.Sprintf("must be between 0 and %d", MaxContext)}
	}
	p := &grepPlan{o: o, limit: o.MaxResults}
	if p.limit == 0 {
		p.limit = DefaultMaxResults
	}
	pat, err := compilePattern(o.Pattern, o.FixedStrings, o.IgnoreCase)
	if err != nil {
		return nil, &InputError{Field: "pattern", Reason: err.Error(), Err: err}
	}
	p.pat = pat
	for _, g := range o.Globs {
		r, ok, err := parseIgnoreLine(g)
		if err != nil {
			return nil, &InputError{Field: "glob", Reason: fmt.Sprintf("%q: %v", g, err), Err: err}
		}
		if ok {
			if p.over == nil {
				p.over = &ignoreRules{}
			}
			p.over.add(r)
		}
	}
	if o.Type != "" {
		t, ok := newTypeFilter(o.Type)
		if !ok {
			return nil, &InputError{Field: "type", Reason: fmt.Sprintf("unknown type %q; known types: %s", o.Type, strings.Join(Types(), ", "))}
		}
		p.types = t
	}
	root, base, err := resolvePath(o.Dir, o.Path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, pathError(o.Path, err)
	}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return nil, &InputError{Field: "path", Reason: fmt.Sprintf("%q is not a regular file or directory", o.Path)}
	}
	p.root, p.base, p.rootDir = root, base, fi.IsDir()
	return p, nil
}

// resolvePath returns the absolute clean path of path (relative to dir) and
// its reported form, slash-separated, as rg reports paths: absolute when
// path is, else path cleaned ("" for dir itself; "../x" stays relative).
func resolvePath(dir, path string) (abs, base string, err error) {
	dir = filepath.Clean(dir)
	switch {
	case path == "":
		return dir, "", nil
	case filepath.IsAbs(path):
		abs = filepath.Clean(path)
		return abs, filepath.ToSlash(abs), nil
	}
	abs = filepath.Join(dir, path)
	base = filepath.ToSlash(filepath.Clean(path))
	if base == "." {
		base = ""
	}
	return abs, base, nil
}

func pathError(path string, err error) error {
	reason := err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		reason = fmt.Sprintf("%q does not exist", path)
	}
	return &InputError{Field: "path", Reason: reason, Err: err}
}

// display is the reported path (slash-separated) of rel, a path relative to
// the search root.
func joinBase(base, rel string) string {
	switch {
	case rel == "":
		return base
	case base == "":
		return rel
	case strings.HasSuffix(base, "/"):
		return base + rel
	}
	return base + "/" + rel
}

// hit is a match before its path is rendered. rel is relative to the root.
type hit struct {
	rel string
	m   Match
}

func hitLess(a, b *hit) int {
	if c := comparePaths(a.rel, b.rel); c != 0 {
		return c
	}
	return a.m.Line - b.m.Line
}

// finish sorts hits, applies the limit and renders paths.
func (p *grepPlan) finish(hits []hit, engine string) Result {
	slices.SortFunc(hits, func(a, b hit) int { return hitLess(&a, &b) })
	if n := p.o.MaxCount; n > 0 {
		kept, run, prev := hits[:0], 0, ""
		for i, h := range hits {
			if i == 0 || h.rel != prev {
				run, prev = 0, h.rel
			}
			if run++; run <= n {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	res := Result{Engine: engine, Matches: []Match{}}
	if len(hits) > p.limit {
		hits = hits[:p.limit]
		res.Truncated = true
	}
	for _, h := range hits {
		h.m.Path = filepath.FromSlash(joinBase(p.base, h.rel))
		res.Matches = append(res.Matches, h.m)
	}
	res.Count = len(res.Matches)
	return res
}

// comparePaths orders slash-separated paths component by component (as a
// sorted depth-first walk visits them): "a/b" < "a-b" < "a.b".
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		switch {
		case ca == '/':
			return -1
		case cb == '/':
			return 1
		case ca < cb:
			return -1
		}
		return 1
	}
	return len(a) - len(b)
}

// lineText renders a line: the terminator dropped, invalid UTF-8 bytes
// replaced with U+FFFD.
func lineText(b []byte) string {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
	return sb.String()
}
