package search

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		glob string
		path string
		want bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "dir/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"**/*.go", "/abs/a.go", true},
		{"**/foo", "foo", true},
		{"**/foo", "a/b/foo", true},
		{"**/foo", "a/xfoo", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "ab", false},
		{"a/**", "a/x", true},
		{"a/**", "a", false},
		{"a/**/*", "a/x/y", true},
		{"**", "anything/at/all", true},
		{"**/**", "x/y", true},
		{"a**b", "axyb", true},
		{"a**b", "ax/yb", false},
		{"?.txt", "a.txt", true},
		{"?.txt", "/.txt", false},
		{"[abc].go", "b.go", true},
		{"[!abc].go", "b.go", false},
		{"[^abc].go", "d.go", true},
		{"[a-c]x", "cx", true},
		{"[]]x", "]x", true},
		{"{foo,bar}.go", "bar.go", true},
		{"{foo,bar}.go", "baz.go", false},
		{"src/{a,b}/*.go", "src/b/x.go", true},
		{`\*.go`, "*.go", true},
		{`\*.go`, "a.go", false},
		{"*", "", true},
		{"foo", "foo/bar", false},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.glob)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tt.glob, err)
		}
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("glob %q match %q = %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
}

func TestGlobErrors(t *testing.T) {
	for _, glob := range []string{"[abc", "{a,b", "a{b,{c,d}}", `foo\`} {
		if _, err := compileGlob(glob); err == nil {
			t.Errorf("compileGlob(%q): no error", glob)
		}
	}
}

// TestIgnoreRules checks gitignore semantics line by line: each case is an
// ignore file's lines, a path relative to its directory, and the verdict.
func TestIgnoreRules(t *testing.T) {
	tests := []struct {
		name  string
		lines string
		path  string
		isDir bool
		want  verdict
	}{
		{"basename anywhere", "*.log", "a/b/c.log", false, ignored},
		{"no match", "*.log", "a/b/c.txt", false, noVerdict},
		{"negation after", "*.log\n!keep.log", "x/keep.log", false, whitelisted},
		{"negation before loses", "!keep.log\n*.log", "keep.log", false, ignored},
		{"dir only on dir", "build/", "build", true, ignored},
		{"dir only on file", "build/", "build", false, noVerdict},
		{"dir only nested", "build/", "a/build", true, ignored},
		{"leading slash anchors", "/root.txt", "root.txt", false, ignored},
		{"leading slash not nested", "/root.txt", "sub/root.txt", false, noVerdict},
		{"middle slash anchors", "docs/gen.md", "docs/gen.md", false, ignored},
		{"middle slash not nested", "docs/gen.md", "x/docs/gen.md", false, noVerdict},
		{"double star middle", "docs/**/gen-*.md", "docs/a/b/gen-x.md", false, ignored},
		{"double star zero dirs", "docs/**/gen-*.md", "docs/gen-x.md", false, ignored},
		{"double star prefix", "**/tmp", "a/tmp", true, ignored},
		{"trailing double star", "out/**", "out/a/b", false, ignored},
		{"trailing double star not dir", "out/**", "out", true, noVerdict},
		{"comment", "#x.txt", "#x.txt", false, noVerdict},
		{"escaped hash", `\#x.txt`, "#x.txt", false, ignored},
		{"escaped bang", `\!x.txt`, "!x.txt", false, ignored},
		{"trailing spaces trimmed", "a.txt   ", "a.txt", false, ignored},
		{"escaped trailing space", `a.txt\ `, "a.txt ", false, ignored},
		{"blank lines", "\n\n*.o\n\n", "x.o", false, ignored},
		{"crlf", "*.o\r\n", "x.o", false, ignored},
		{"star not across dirs", "a/*.go", "a/b/c.go", false, noVerdict},
		{"class", "*.[oa]", "lib.a", false, ignored},
		{"braces", "*.{jpg,png}", "x/y.png", false, ignored},
		{"whitelist dir", "*\n!sub/", "sub", true, whitelisted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := parseIgnoreFile([]byte(tt.lines))
			if got := rs.match(tt.path, tt.isDir); got != tt.want {
				t.Errorf("rules %q on %q (dir=%v) = %v, want %v", tt.lines, tt.path, tt.isDir, got, tt.want)
			}
		})
	}
}

// TestIgnorePrecedence checks how ignore files in different directories
// and of different kinds combine.
func TestIgnorePrecedence(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("repo/.git/info/exclude", "excluded.txt\n")
	write("repo/.gitignore", "*.log\n/top.txt\n")
	write("repo/.ignore", "!special.log\n")
	write("repo/sub/.gitignore", "!debug.log\n")
	write("repo/sub/.rgignore", "debug.log\n")
	write("repo/other/.gitignore", "!debug.log\n")
	write("repo/vendor/.git/HEAD", "")
	write("nogit/.gitignore", "*.log\n")
	write("nogit/.ignore", "*.tmp\n")

	ctx := func(dirs ...string) *dirIgnore {
		// Build the chain the walker would: repo root, then each dir.
		var d *dirIgnore
		for i, dir := range dirs {
			abs := filepath.Join(root, filepath.FromSlash(dir))
			rel := ""
			if i > 0 {
				rel = dir[len(dirs[0])+1:]
			}
			d = childIgnore(d, abs, rel, func(name string) bool {
				_, err := os.Stat(filepath.Join(abs, name))
				return err == nil
			})
		}
		return d
	}
	tests := []struct {
		name string
		dirs []string
		rel  string
		want verdict
	}{
		{"gitignore in repo", []string{"repo"}, "a.log", ignored},
		{"anchored at repo root", []string{"repo"}, "top.txt", ignored},
		{"anchored not below", []string{"repo", "repo/other"}, "other/top.txt", noVerdict},
		{"info/exclude", []string{"repo"}, "excluded.txt", ignored},
		{".ignore beats .gitignore", []string{"repo"}, "special.log", whitelisted},
		{"nested negation beats parent", []string{"repo", "repo/other"}, "other/debug.log", whitelisted},
		{".rgignore beats nested .gitignore", []string{"repo", "repo/sub"}, "sub/debug.log", ignored},
		{"nested repo stops outer gitignore", []string{"repo", "repo/vendor"}, "vendor/lib.log", noVerdict},
		{"gitignore needs git", []string{"nogit"}, "a.log", noVerdict},
		{".ignore needs no git", []string{"nogit"}, "a.tmp", ignored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := matchIgnored(ctx(tt.dirs...), tt.rel, false); got != tt.want {
				t.Errorf("matchIgnored(%q) = %v, want %v", tt.rel, got, tt.want)
			}
		})
	}
}
