package search

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func globPaths(r GlobResult, dirs bool) []string {
	var out []string
	for _, e := range r.Entries {
		if e.IsDir && !dirs {
			continue
		}
		out = append(out, filepath.ToSlash(e.Path))
	}
	slices.Sort(out)
	return out
}

func TestGlob(t *testing.T) {
	repo := buildFixture(t)
	tests := []struct {
		name      string
		o         GlobOptions
		want, not []string
		trunc     bool
	}{
		{name: "go files", o: GlobOptions{Pattern: "**/*.go"},
			want: []string{"main.go", "util.go", "sub/deep/nested.go"},
			not:  []string{"build/out.go", ".hidden/secret.go", ".hidden.go", "link.go", "ignored_by_dotignore.go", "linkdir/deep/nested.go"}},
		{name: "hidden", o: GlobOptions{Pattern: "**/*.go", Hidden: true}, want: []string{".hidden/secret.go", ".hidden.go"}, not: []string{"build/out.go"}},
		{name: "pattern names dot dir", o: GlobOptions{Pattern: ".hidden/*.go"}, want: []string{".hidden/secret.go"}},
		{name: "pattern names dot file", o: GlobOptions{Pattern: "**/.env"}, want: []string{".env"}},
		{name: "no ignore", o: GlobOptions{Pattern: "**/*.go", NoIgnore: true}, want: []string{"build/out.go", "ignored_by_dotignore.go"}},
		{name: "one level", o: GlobOptions{Pattern: "sub/*"}, want: []string{"sub/debug.log", "sub/deep", "sub/rootonly.txt"}, not: []string{"sub/deep/nested.go", "sub/x.tmp", "sub/.gitignore"}},
		{name: "braces", o: GlobOptions{Pattern: "web/*.{js,ts}"}, want: []string{"web/app.js", "web/types.ts"}, not: []string{"web/style.css"}},
		{name: "path", o: GlobOptions{Pattern: "*.go", Path: "sub/deep"}, want: []string{"sub/deep/nested.go"}},
		{name: "absolute pattern", o: GlobOptions{Pattern: filepath.Join(repo, "web", "*.css")}, want: []string{filepath.ToSlash(filepath.Join(repo, "web", "style.css"))}},
		{name: "absolute path", o: GlobOptions{Pattern: "*.css", Path: filepath.Join(repo, "web")}, want: []string{filepath.ToSlash(filepath.Join(repo, "web", "style.css"))}},
		{name: "relative path", o: GlobOptions{Pattern: "deep/*.go", Path: "./sub"}, want: []string{"sub/deep/nested.go"}},
		{name: "missing prefix", o: GlobOptions{Pattern: "nope/**/*.go"}},
		{name: "git dir skipped", o: GlobOptions{Pattern: "**/config", Hidden: true}, not: []string{".git/config"}},
		{name: "git dir named", o: GlobOptions{Pattern: ".git/*"}, want: []string{".git/config", ".git/HEAD"}},
		{name: "truncated", o: GlobOptions{Pattern: "**", MaxResults: 3}, trunc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Dir = repo
			r, err := Glob(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			got := globPaths(r, true)
			for _, p := range tt.want {
				if !slices.Contains(got, p) {
					t.Errorf("missing %s in %v", p, got)
				}
			}
			for _, p := range tt.not {
				if slices.Contains(got, p) {
					t.Errorf("unexpected %s", p)
				}
			}
			if r.Truncated != tt.trunc || r.Count != len(r.Entries) {
				t.Errorf("Truncated = %v, Count = %d, len = %d", r.Truncated, r.Count, len(r.Entries))
			}
			if tt.trunc && r.Count != o.MaxResults {
				t.Errorf("Count = %d, want %d", r.Count, o.MaxResults)
			}
		})
	}
}

func TestGlobNewestFirst(t *testing.T) {
	repo := buildFixture(t)
	base := time.Now().Add(-time.Hour)
	for i, rel := range []string{"web/app.js", "web/types.ts", "web/index.html", "web/style.css"} {
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(repo, filepath.FromSlash(rel)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Glob(context.Background(), GlobOptions{Pattern: "web/*", Dir: repo, MaxResults: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range r.Entries {
		got = append(got, filepath.ToSlash(e.Path))
		if e.IsDir || e.Size == 0 || e.ModTime.IsZero() {
			t.Errorf("entry %+v", e)
		}
	}
	want := []string{"web/style.css", "web/index.html", "web/types.ts"}
	if !reflect.DeepEqual(got, want) || !r.Truncated {
		t.Errorf("entries = %v (truncated %v), want %v truncated", got, r.Truncated, want)
	}
}

// TestGlobMatchesRGFiles checks that Glob's ignore and hidden handling
// selects the same files as rg --files.
func TestGlobMatchesRGFiles(t *testing.T) {
	checkGlobMatchesRGFiles(t, rgPath(t), buildFixture(t), "")
}

// checkGlobMatchesRGFiles requires Glob("**") in dir to list the same files
// as rg --files run there (rg at path rg), under each combination of Hidden
// and NoIgnore. label starts each failure message.
func checkGlobMatchesRGFiles(t *testing.T, rg, dir, label string) {
	t.Helper()
	for _, hidden := range []bool{false, true} {
		for _, noIgnore := range []bool{false, true} {
			args := []string{"--files", "--no-config", "--no-ignore-global", "--glob=!.git"}
			if hidden {
				args = append(args, "--hidden")
			}
			if noIgnore {
				args = append(args, "--no-ignore")
			}
			cmd := exec.Command(rg, args...)
			cmd.Dir = dir
			out, err := cmd.Output()
			// rg exits 1 when it lists no file.
			if ee, ok := errors.AsType[*exec.ExitError](err); err != nil && (!ok || ee.ExitCode() != 1) {
				t.Fatalf("%srg --files: %v", label, err)
			}
			var want []string
			for p := range strings.Lines(string(out)) {
				if p = strings.TrimSuffix(p, "\n"); p != "" {
					want = append(want, filepath.ToSlash(p))
				}
			}
			slices.Sort(want)
			r, err := Glob(context.Background(), GlobOptions{Pattern: "**", Dir: dir, Hidden: hidden, NoIgnore: noIgnore, MaxResults: 100000})
			if err != nil {
				t.Fatal(err)
			}
			if got := globPaths(r, false); !reflect.DeepEqual(got, want) {
				t.Errorf("%shidden=%v noIgnore=%v: glob files\n got %v\nwant %v", label, hidden, noIgnore, got, want)
			}
		}
	}
}

func TestGlobInputErrors(t *testing.T) {
	repo := buildFixture(t)
	tests := []inputErrorCase[GlobOptions]{
		{"empty pattern", GlobOptions{Pattern: ""}, "pattern"},
		{"bad pattern", GlobOptions{Pattern: "[abc"}, "pattern"},
		{"missing path", GlobOptions{Pattern: "*", Path: "nope"}, "path"},
		{"file path", GlobOptions{Pattern: "*", Path: "main.go"}, "path"},
		{"negative max", GlobOptions{Pattern: "*", MaxResults: -2}, "max_results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Dir = repo
			_, err := Glob(context.Background(), o)
			checkInputError(t, err, tt.field)
		})
	}
}
