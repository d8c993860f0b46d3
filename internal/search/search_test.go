package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rgPath returns the rg binary, skipping the test when it is not
// installed, except under CI (CI set), where a missing rg fails the test:
// the differential tests must not pass by skipping there.
func rgPath(t testing.TB) string {
	t.Helper()
	p, ok := lookRG(t)
	if !ok {
		t.Skip("rg is not installed")
	}
	return p
}

// lookRG finds rg; under CI a missing rg fails t.
func lookRG(t testing.TB) (string, bool) {
	t.Helper()
	p, err := exec.LookPath("rg")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("rg is not installed, and CI=%s: the comparisons with rg must run in CI", os.Getenv("CI"))
		}
		return "", false
	}
	return p, true
}

func writeFile(t testing.TB, root, rel string, content []byte) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

// bigLines returns n lines "L00000".."L<n-1>" with needle as line needleAt
// (0-based), 7 bytes each.
func bigLines(n, needleAt int) []byte {
	var b bytes.Buffer
	for i := range n {
		if i == needleAt {
			b.WriteString("needle\n")
			continue
		}
		fmt.Fprintf(&b, "L%05d\n", i)
	}
	return b.Bytes()
}

// buildFixture creates outer/repo, a git work tree with ignore files at
// several levels, hidden and binary files, unicode and several file types.
// It returns the repo directory.
func buildFixture(t testing.TB) string {
	t.Helper()
	outer := filepath.Join(t.TempDir(), "outer")
	w := func(rel, content string) { writeFile(t, outer, rel, []byte(content)) }
	// An ignore file above the search root applies too.
	w(".ignore", "from_parent.txt\n")
	w("repo/.git/HEAD", "ref: refs/heads/main\n")
	w("repo/.git/config", "needle in git config\n")
	w("repo/.git/info/exclude", "excluded.txt\n")
	w("repo/.gitignore", "*.log\n!keep.log\nbuild/\n/rootonly.txt\ndocs/**/gen-*.md\n\\#hash.txt\n!.env\n")
	w("repo/.ignore", "ignored_by_dotignore.go\n")
	w("repo/.rgignore", "!rgwhitelisted.log\n")
	w("repo/main.go", "package main\n\nfunc main() {\n\tprintln(\"needle\")\n}\n\nfunc needleHandler() {}\n")
	w("repo/util.go", "package main\n\n// Needle finder.\n// a.b*c(needle) literal\nfunc findNeedle(s string) bool {\n\treturn s == \"NEEDLE\"\n}\n\nvar x = \"needle needle\"\n")
	w("repo/app.py", "def needle():\n    return 'needle'\n\nclass Haystack:\n    pass\n")
	w("repo/web/app.js", "function needle() { return 1; }\n")
	w("repo/web/style.css", ".needle { color: red; }\n")
	w("repo/web/index.html", "<p>needle</p>\n")
	w("repo/web/types.ts", "export const needle: number = 1;\n")
	w("repo/README.md", "# Needle\n\nFind the needle in the haystack.\n")
	w("repo/config.yaml", "needle: true\n")
	w("repo/data.json", "{\"needle\": 1}\n")
	w("repo/script.sh", "#!/bin/sh\necho needle\n")
	w("repo/.bashrc", "alias needle=true\n")
	w("repo/debug.log", "needle in a log\n")
	w("repo/keep.log", "needle kept\n")
	w("repo/rgwhitelisted.log", "needle via rgignore\n")
	w("repo/build/out.go", "package build // needle\n")
	w("repo/rootonly.txt", "needle root only\n")
	w("repo/sub/rootonly.txt", "needle not root\n")
	w("repo/excluded.txt", "needle excluded\n")
	w("repo/from_parent.txt", "needle from parent\n")
	w("repo/ignored_by_dotignore.go", "package main // needle\n")
	w("repo/#hash.txt", "needle hash\n")
	w("repo/.hidden/secret.go", "package hidden // needle\n")
	w("repo/.hidden.go", "package main // needle hidden file\n")
	w("repo/.env", "NEEDLE=1\n")
	w("repo/.github/workflows/ci.yml", "name: needle\n")
	w("repo/sub/.gitignore", "!debug.log\n*.tmp\n")
	w("repo/sub/debug.log", "needle sub debug\n")
	w("repo/sub/x.tmp", "needle tmp\n")
	w("repo/sub/deep/nested.go", "package deep\n\nfunc Needle() {}\n")
	w("repo/sub/vendor/.git/HEAD", "")
	w("repo/sub/vendor/lib.log", "needle in nested repo\n")
	w("repo/docs/a/gen-x.md", "needle generated\n")
	w("repo/docs/a/keep.md", "needle doc\n")
	w("repo/unicode.txt", "héllo wörld needle\nЖук NEEDLE ñ\n日本語 needle\néneedle\nſkip KELVIN\n")
	w("regex/regex.txt", "Σίσυφος ΣΊΣΥΦΟΣ σίσυφος ς\nemoji \U0001F600 here\ntab\there\nαβγ 123 ٣٤٥\nsnake_case_word CamelCase\nprice: $100.00\na\u00a0b\nx<y>z\npath/to/file\naaa bbb\n")
	w("repo/invalid.txt", "bad \xff\xfe needle\n")
	w("repo/crlf.txt", "needle\r\nline two\r\nneedle again\r\n")
	w("repo/empty.txt", "")
	w("repo/a-b.txt", "needle\n")
	w("repo/a/b.txt", "needle\n")
	w("repo/a.b.txt", "needle\n")
	w("repo/bin/binary.bin", "needle\x00\x01\x02 needle\n")
	w("repo/bin/sniff.dat", "ne\nneedle\x00\n")
	w("repo/bin/utf16.txt", "\xff\xfen\x00e\x00e\x00d\x00l\x00e\x00 \x00u\x00\n\x00")
	w("repo/bin/bom.txt", "\xef\xbb\xbfneedle bom\n")
	late := bigLines(20000, 9400)
	late = late[:140000]
	late[131060] = 0
	writeFile(t, outer, "repo/bin/late.dat", late)
	var big bytes.Buffer
	for i := range 30000 {
		if i%997 == 0 {
			fmt.Fprintf(&big, "line %d has a needle\n", i)
		} else {
			fmt.Fprintf(&big, "line %d\n", i)
		}
	}
	writeFile(t, outer, "repo/big/big.txt", big.Bytes())
	repo := filepath.Join(outer, "repo")
	if err := os.Symlink("main.go", filepath.Join(repo, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(repo, "linkdir")); err != nil {
		t.Fatal(err)
	}
	return repo
}

type grepCase struct {
	name string
	o    Options
	// want lists paths that must be in the result, not those that must not.
	want, not []string
	trunc     bool
	none      bool // no match expected; every other case must match
}

func grepCases() []grepCase {
	return []grepCase{
		{name: "literal", o: Options{Pattern: "needle", FixedStrings: true, MaxResults: 1000},
			want: []string{"main.go", "keep.log", "rgwhitelisted.log", "sub/debug.log", "sub/vendor/lib.log", "sub/rootonly.txt", "docs/a/keep.md", "bin/bom.txt", "bin/utf16.txt", "big/big.txt"},
			not: []string{"debug.log", "build/out.go", "rootonly.txt", "excluded.txt", "from_parent.txt", "ignored_by_dotignore.go", "#hash.txt",
				".hidden/secret.go", ".hidden.go", "sub/x.tmp", "docs/a/gen-x.md", "bin/binary.bin", "bin/late.dat", "bin/sniff.dat", "link.go", "linkdir/debug.log", ".git/config"}},
		{name: "regex", o: Options{Pattern: `func \w+Handler\(`}, want: []string{"main.go"}, not: []string{"util.go"}},
		{name: "regex without literal", o: Options{Pattern: `ne+d(le|x)|zzz`, MaxResults: 1000}, want: []string{"main.go", "unicode.txt"}},
		{name: "ignore case", o: Options{Pattern: "NEEDLE", IgnoreCase: true, MaxResults: 1000}, want: []string{"util.go", "unicode.txt", "README.md", ".env"}},
		{name: "ignore case unicode fold", o: Options{Pattern: "жук|skip|kelvin", IgnoreCase: true}, want: []string{"unicode.txt"}},
		{name: "ignore case k and s", o: Options{Pattern: "SKIP", IgnoreCase: true, FixedStrings: true}, want: []string{"unicode.txt"}},
		{name: "fixed strings with metachars", o: Options{Pattern: "a.b*c(needle)", FixedStrings: true}, want: []string{"util.go"}},
		{name: "context", o: Options{Pattern: "needle", Context: 2, MaxResults: 1000}, want: []string{"util.go"}},
		{name: "glob include", o: Options{Pattern: "needle", Globs: []string{"*.go"}}, want: []string{"main.go", ".hidden.go", "ignored_by_dotignore.go"}, not: []string{"app.py", ".hidden/secret.go", "build/out.go"}},
		{name: "glob exclude", o: Options{Pattern: "needle", Globs: []string{"!*.go", "!bin/**"}, MaxResults: 1000}, want: []string{"app.py"}, not: []string{"main.go", "bin/sniff.dat"}},
		{name: "glob include dir", o: Options{Pattern: "needle", IgnoreCase: true, Globs: []string{"sub/**"}}, want: []string{"sub/deep/nested.go", "sub/x.tmp"}, not: []string{"main.go"}},
		{name: "glob whitelists ignored", o: Options{Pattern: "needle", Globs: []string{"*.log"}}, want: []string{"debug.log", "keep.log"}},
		{name: "type go", o: Options{Pattern: "needle", IgnoreCase: true, Type: "go"}, want: []string{"main.go", "sub/deep/nested.go", ".hidden.go"}, not: []string{"app.py"}},
		{name: "type py", o: Options{Pattern: "needle", Type: "py"}, want: []string{"app.py"}, not: []string{"main.go"}},
		{name: "type sh hidden name", o: Options{Pattern: "needle", Type: "sh"}, want: []string{"script.sh", ".bashrc"}},
		{name: "type md", o: Options{Pattern: "needle", Type: "md", IgnoreCase: true}, want: []string{"README.md", "docs/a/keep.md"}},
		{name: "hidden", o: Options{Pattern: "needle", Hidden: true, MaxResults: 1000}, want: []string{".hidden/secret.go", ".hidden.go", ".github/workflows/ci.yml"}, not: []string{".git/config"}},
		{name: "no ignore", o: Options{Pattern: "needle", NoIgnore: true, MaxResults: 1000}, want: []string{"debug.log", "build/out.go", "rootonly.txt", "excluded.txt", "from_parent.txt"}, not: []string{".hidden.go"}},
		{name: "hidden and no ignore", o: Options{Pattern: "needle", NoIgnore: true, Hidden: true, MaxResults: 1000}, want: []string{".hidden/secret.go", "sub/x.tmp"}, not: []string{".git/config"}},
		{name: "max results truncation", o: Options{Pattern: "needle", MaxResults: 5}, trunc: true},
		{name: "max results with context", o: Options{Pattern: "needle", MaxResults: 7, Context: 1}, trunc: true},
		{name: "truncation inside big file", o: Options{Pattern: "needle", Path: "big", MaxResults: 3, Context: 2}, trunc: true},
		{name: "single file path", o: Options{Pattern: "needle", Path: "util.go"}, want: []string{"util.go"}},
		{name: "explicit binary file", o: Options{Pattern: "needle", Path: "bin/binary.bin"}, want: []string{"bin/binary.bin"}},
		{name: "explicit hidden dir", o: Options{Pattern: "needle", Path: ".hidden"}, want: []string{".hidden/secret.go"}},
		{name: "sub path", o: Options{Pattern: "needle", Path: "sub"}, want: []string{"sub/debug.log"}, not: []string{"sub/x.tmp"}},
		{name: "binary sniff read", o: Options{Pattern: "^ne", Path: "bin"}, want: []string{"bin/sniff.dat"}},
		{name: "late binary with context", o: Options{Pattern: "needle", Path: "bin", Context: 1}, want: []string{"bin/late.dat"}},
		{name: "late binary without context", o: Options{Pattern: "needle", Path: "bin"}, not: []string{"bin/late.dat"}},
		{name: "big file context", o: Options{Pattern: "needle", Path: "big", Context: 3, MaxResults: 1000}, want: []string{"big/big.txt"}},
		{name: "unicode word class", o: Options{Pattern: `\w+ needle`}, want: []string{"unicode.txt"}},
		{name: "word boundary", o: Options{Pattern: `\bneedle\b`, MaxResults: 1000}, want: []string{"main.go"}},
		{name: "anchors", o: Options{Pattern: `^needle$`, MaxResults: 1000}, want: []string{"a-b.txt"}, not: []string{"crlf.txt"}},
		{name: "text anchors", o: Options{Pattern: `\Aneedle`, MaxResults: 1000}, want: []string{"crlf.txt"}},
		{name: "empty matches", o: Options{Pattern: `x*`, MaxResults: 10}, trunc: true},
		{name: "empty pattern", o: Options{Pattern: "", Path: "crlf.txt"}, want: []string{"crlf.txt"}},
		{name: "invalid utf8", o: Options{Pattern: "needle", Path: "invalid.txt"}, want: []string{"invalid.txt"}},
		{name: "escaped punctuation", o: Options{Pattern: `\"needle\"`}, want: []string{"main.go"}},
		{name: "no match", o: Options{Pattern: "zzzz-not-there"}, none: true},
		{name: "unicode digits", o: Options{Pattern: `\d+`, Path: "../regex"}},
		{name: "unicode space", o: Options{Pattern: `a\sb`, Path: "../regex"}},
		{name: "unicode fold", o: Options{Pattern: `(?i)σίσυφος`, Path: "../regex"}},
		{name: "ignore case sigma", o: Options{Pattern: `ΣΊΣΥΦΟΣ`, IgnoreCase: true, FixedStrings: true, Path: "../regex"}},
		{name: "astral escape", o: Options{Pattern: `\x{1F600}`, Path: "../regex"}},
		{name: "posix classes", o: Options{Pattern: `[[:upper:]][[:lower:]]+Case`, Path: "../regex"}},
		{name: "named group lazy", o: Options{Pattern: `(?P<w>snake)_\w+?_`, Path: "../regex"}},
		{name: "escapes", o: Options{Pattern: `\$\d+\.\d{2}|x\<y\>|path\/to`, Path: "../regex"}},
		{name: "negated unicode classes", o: Options{Pattern: `[^\w\s]+`, Path: "../regex"}},
		{name: "non-word runs", o: Options{Pattern: `\W{2,}`, Path: "../regex"}},
		{name: "ungreedy flag", o: Options{Pattern: `(?U)a+ b{2,3}`, Path: "../regex"}},
		{name: "ignore case regex", o: Options{Pattern: `NEED.E\b`, IgnoreCase: true, MaxResults: 1000}},
		{name: "case flag scoped", o: Options{Pattern: `(?i:n)EEDLE`, IgnoreCase: false, MaxResults: 1000}, want: []string{"unicode.txt"}},
		{name: "case flag off", o: Options{Pattern: `(?-i:N)eedle`, IgnoreCase: true, MaxResults: 1000}, want: []string{"README.md"}},
	}
}

// TestEnginesAgree runs every case through both engines and requires
// identical results, plus the case's own expectations.
func TestEnginesAgree(t *testing.T) {
	rg := rgPath(t)
	repo := buildFixture(t)
	for _, tc := range grepCases() {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Dir = repo
			got, diff := compareEngines(t, rg, o)
			if diff != "" {
				t.Errorf("results differ\n%s", diff)
			}
			checkCase(t, tc, got)
		})
	}
}

// compareEngines runs o through GrepBuiltin and GrepRG (with the rg binary
// at rg) and returns the builtin result, its Engine cleared, with a diff
// against rg's, "" when they agree. It stops the test if either engine
// fails, and fails it if either reports another engine's name.
func compareEngines(t *testing.T, rg string, o Options) (Result, string) {
	t.Helper()
	got, err := GrepBuiltin(context.Background(), o)
	if err != nil {
		t.Fatalf("builtin: %v", err)
	}
	want, err := GrepRG(context.Background(), rg, o)
	if err != nil {
		t.Fatalf("rg: %v", err)
	}
	if got.Engine != EngineBuiltin || want.Engine != EngineRG {
		t.Errorf("engines = %q, %q", got.Engine, want.Engine)
	}
	got.Engine, want.Engine = "", ""
	if reflect.DeepEqual(got, want) {
		return got, ""
	}
	return got, diffResults(got, want)
}

// TestOutsidePath searches a path outside Dir: paths come back as rg
// prints them, relative ("../web/app.js") when the path was given relative,
// absolute when it was given absolute, whether under Dir or not.
func TestOutsidePath(t *testing.T) {
	rg := rgPath(t)
	repo := buildFixture(t)
	for _, tc := range []struct{ dir, path, want string }{
		{filepath.Join(repo, "sub"), "../web", "../web/app.js"},
		{filepath.Join(repo, "sub"), filepath.Join(repo, "web"), filepath.Join(repo, "web", "app.js")},
		{repo, filepath.Join(repo, "web"), filepath.Join(repo, "web", "app.js")},
		{repo, "./web/", "web/app.js"},
	} {
		o := Options{Pattern: "needle", Dir: tc.dir, Path: tc.path, Globs: []string{"*.js"}}
		got, diff := compareEngines(t, rg, o)
		if diff != "" {
			t.Errorf("%s: results differ\n%s", tc.path, diff)
		}
		if len(got.Matches) != 1 || got.Matches[0].Path != filepath.FromSlash(tc.want) {
			t.Errorf("path %q from %s: matches = %+v, want one in %s", tc.path, tc.dir, got.Matches, tc.want)
		}
	}
}

func checkCase(t *testing.T, tc grepCase, r Result) {
	t.Helper()
	paths := map[string]bool{}
	for _, m := range r.Matches {
		paths[filepath.ToSlash(m.Path)] = true
		if m.Line < 1 || m.Column < 1 || m.Column > len(m.Text)+1 {
			t.Errorf("bad position %s:%d:%d %q", m.Path, m.Line, m.Column, m.Text)
		}
		if tc.o.Context == 0 && (m.Before != nil || m.After != nil) {
			t.Errorf("context lines without Context: %+v", m)
		}
	}
	for _, p := range tc.want {
		if !paths[p] {
			t.Errorf("missing %s in %v", p, slices.Sorted(mapsKeys(paths)))
		}
	}
	for _, p := range tc.not {
		if paths[p] {
			t.Errorf("unexpected %s", p)
		}
	}
	if (r.Count == 0) != tc.none {
		t.Errorf("Count = %d, want a match: %v", r.Count, !tc.none)
	}
	if r.Truncated != tc.trunc {
		t.Errorf("Truncated = %v, want %v", r.Truncated, tc.trunc)
	}
	if r.Count != len(r.Matches) {
		t.Errorf("Count = %d, len(Matches) = %d", r.Count, len(r.Matches))
	}
	limit := tc.o.MaxResults
	if limit == 0 {
		limit = DefaultMaxResults
	}
	if r.Truncated && r.Count != limit {
		t.Errorf("truncated with %d matches, want %d", r.Count, limit)
	}
	if !slices.IsSortedFunc(r.Matches, func(a, b Match) int {
		if c := comparePaths(filepath.ToSlash(a.Path), filepath.ToSlash(b.Path)); c != 0 {
			return c
		}
		return a.Line - b.Line
	}) {
		t.Errorf("matches not sorted")
	}
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func diffResults(got, want Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "builtin: count=%d truncated=%v\nrg:      count=%d truncated=%v\n", got.Count, got.Truncated, want.Count, want.Truncated)
	n := max(len(got.Matches), len(want.Matches))
	shown := 0
	for i := 0; i < n && shown < 10; i++ {
		var g, w *Match
		if i < len(got.Matches) {
			g = &got.Matches[i]
		}
		if i < len(want.Matches) {
			w = &want.Matches[i]
		}
		if g != nil && w != nil && reflect.DeepEqual(*g, *w) {
			continue
		}
		shown++
		fmt.Fprintf(&b, "#%d\n  builtin: %s\n  rg:      %s\n", i, fmtMatch(g), fmtMatch(w))
	}
	return b.String()
}

func fmtMatch(m *Match) string {
	if m == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s:%d:%d %q before=%v after=%v", m.Path, m.Line, m.Column, m.Text, m.Before, m.After)
}

func TestMatchDetails(t *testing.T) {
	repo := buildFixture(t)
	ctx := context.Background()
	r, err := GrepBuiltin(ctx, Options{Pattern: "needle", Dir: repo, Path: "util.go", Context: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []Match{
		{Path: "util.go", Line: 4, Column: 10, Text: "// a.b*c(needle) literal",
			Before: []Line{{3, "// Needle finder."}}, After: []Line{{5, "func findNeedle(s string) bool {"}}},
		{Path: "util.go", Line: 9, Column: 10, Text: `var x = "needle needle"`,
			Before: []Line{{8, ""}}},
	}
	if !reflect.DeepEqual(r.Matches, want) {
		t.Errorf("matches:\n got %+v\nwant %+v", r.Matches, want)
	}

	r, err = GrepBuiltin(ctx, Options{Pattern: "needle", Dir: repo, Path: "invalid.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Matches) != 1 || r.Matches[0].Text != "bad \uFFFD\uFFFD needle" || r.Matches[0].Column != 8 {
		t.Errorf("invalid UTF-8: %+v", r.Matches)
	}

	r, err = GrepBuiltin(ctx, Options{Pattern: "again", Dir: repo, Path: "crlf.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Matches) != 1 || r.Matches[0].Text != "needle again" || r.Matches[0].Line != 3 {
		t.Errorf("CRLF: %+v", r.Matches)
	}

	r, err = GrepBuiltin(ctx, Options{Pattern: "needle", Dir: repo, Path: "bin/utf16.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Matches) != 1 || r.Matches[0].Text != "needle u" {
		t.Errorf("UTF-16: %+v", r.Matches)
	}
}

// inputErrorCase is a call that must fail with an *InputError on field.
type inputErrorCase[O any] struct {
	name  string
	o     O
	field string
}

// checkInputError fails t unless err is an *InputError on field.
func checkInputError(t *testing.T, err error, field string) {
	t.Helper()
	if ie, ok := errors.AsType[*InputError](err); !ok || ie.Field != field {
		t.Errorf("err = %v, want InputError on %q", err, field)
	}
}

func TestInputErrors(t *testing.T) {
	repo := buildFixture(t)
	tests := []inputErrorCase[Options]{
		{"bad regex", Options{Pattern: "(unclosed"}, "pattern"},
		{"bad repetition", Options{Pattern: "a**"}, "pattern"},
		{"newline", Options{Pattern: "a\nb"}, "pattern"},
		{"escaped newline", Options{Pattern: `a\nb`}, "pattern"},
		{"fixed newline", Options{Pattern: "a\nb", FixedStrings: true}, "pattern"},
		{"missing path", Options{Pattern: "x", Path: "no/such/dir"}, "path"},
		{"unknown type", Options{Pattern: "x", Type: "klingon"}, "type"},
		{"bad glob", Options{Pattern: "x", Globs: []string{"[abc"}}, "glob"},
		{"negative context", Options{Pattern: "x", Context: -1}, "context"},
		{"huge context", Options{Pattern: "x", Context: 1 << 30}, "context"},
		{"negative max", Options{Pattern: "x", MaxResults: -1}, "max_results"},
		{"relative dir", Options{Pattern: "x", Dir: "relative"}, "dir"},
	}
	engines := map[string]func(context.Context, Options) (Result, error){"builtin": GrepBuiltin}
	if rg, ok := lookRG(t); ok {
		engines["rg"] = func(ctx context.Context, o Options) (Result, error) { return GrepRG(ctx, rg, o) }
	}
	for name, grep := range engines {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				o := tt.o
				if o.Dir == "" {
					o.Dir = repo
				}
				_, err := grep(context.Background(), o)
				checkInputError(t, err, tt.field)
			})
		}
	}
	_, err := GrepBuiltin(context.Background(), Options{Pattern: "x", Dir: repo, Path: "nope"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v does not wrap os.ErrNotExist", err)
	}
}

// TestRGRegexErrorMapping checks that rg's own complaints about a pattern
// or a glob come back as input errors: a real rg is given a pattern it
// rejects (bypassing the Go validation that normally catches it first).
func TestRGRegexErrorMapping(t *testing.T) {
	if rg, ok := lookRG(t); ok {
		repo := buildFixture(t)
		p, err := newGrepPlan(Options{Pattern: "x", Dir: repo})
		if err != nil {
			t.Fatal(err)
		}
		p.pat.rg = "(unclosed"
		_, _, err = p.runRG(context.Background(), rg, false)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != "pattern" || !strings.Contains(ie.Reason, "unclosed group") {
			t.Errorf("rg with a bad regex: err = %v, want pattern InputError", err)
		}
	}
	err := rgError("regex parse error:\n    (\n    ^\nerror: unclosed group", errors.New("exit status 2"))
	var ie *InputError
	if !errors.As(err, &ie) || ie.Field != "pattern" {
		t.Errorf("rgError = %v, want pattern InputError", err)
	}
	err = rgError("error parsing glob '{a': unclosed alternate group", errors.New("exit status 2"))
	if !errors.As(err, &ie) || ie.Field != "glob" {
		t.Errorf("rgError = %v, want glob InputError", err)
	}
}

func TestCanceled(t *testing.T) {
	repo := buildFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := GrepBuiltin(ctx, Options{Pattern: "needle", Dir: repo}); !errors.Is(err, context.Canceled) {
		t.Errorf("builtin: err = %v, want context.Canceled", err)
	}
	if rg, ok := lookRG(t); ok {
		if _, err := GrepRG(ctx, rg, Options{Pattern: "needle", Dir: repo}); !errors.Is(err, context.Canceled) {
			t.Errorf("rg: err = %v, want context.Canceled", err)
		}
	}
	if _, err := Glob(ctx, GlobOptions{Pattern: "**", Dir: repo}); !errors.Is(err, context.Canceled) {
		t.Errorf("glob: err = %v, want context.Canceled", err)
	}
}

func TestGrepPicksEngine(t *testing.T) {
	repo := buildFixture(t)
	r, err := Grep(context.Background(), Options{Pattern: "needle", Dir: repo, Path: "main.go"})
	if err != nil {
		t.Fatal(err)
	}
	want := EngineBuiltin
	if _, ok := lookRG(t); ok {
		want = EngineRG
	}
	if r.Engine != want || r.Count != 2 {
		t.Errorf("Grep = %+v, want engine %s with 2 matches", r, want)
	}
	// A broken rg on PATH: the built-in engine answers.
	bin := t.TempDir()
	writeFile(t, bin, "rg", []byte("#!/bin/sh\nexit 3\n"))
	if err := os.Chmod(filepath.Join(bin, "rg"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	r, err = Grep(context.Background(), Options{Pattern: "needle", Dir: repo, Path: "main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != EngineBuiltin || r.Count != 2 {
		t.Errorf("with a broken rg, Grep = %+v", r)
	}
	t.Setenv("PATH", t.TempDir())
	r, err = Grep(context.Background(), Options{Pattern: "needle", Dir: repo, Path: "main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != EngineBuiltin {
		t.Errorf("without rg on PATH, engine = %s", r.Engine)
	}
}

// TestMaxCount caps the matches per file as rg --max-count does, in both
// engines, with and without context.
func TestMaxCount(t *testing.T) {
	rg := rgPath(t)
	repo := buildFixture(t)
	for _, ctxLines := range []int{0, 1} {
		o := Options{Pattern: "needle", Dir: repo, IgnoreCase: true, MaxCount: 1, Context: ctxLines}
		got, diff := compareEngines(t, rg, o)
		if diff != "" {
			t.Errorf("context %d: results differ\n%s", ctxLines, diff)
		}
		perFile := map[string]int{}
		for _, m := range got.Matches {
			perFile[m.Path]++
		}
		if perFile["util.go"] != 1 || perFile["main.go"] != 1 || got.Truncated {
			t.Errorf("context %d: per file %v, truncated %v; want 1 in util.go and main.go, not truncated", ctxLines, perFile, got.Truncated)
		}
	}
	if _, err := GrepBuiltin(context.Background(), Options{Pattern: "x", Dir: repo, MaxCount: -1}); err == nil || !strings.Contains(err.Error(), "max_count") {
		t.Errorf("max_count -1: err = %v, want one naming max_count", err)
	}
}
