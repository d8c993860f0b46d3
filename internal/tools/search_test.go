package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/search"
)

// The text form renders matches as rg --heading -n does, context lines
// numbered from the match, each path once, "--" where lines skip.
func TestRenderRG(t *testing.T) {
	r := search.Result{Count: 3, Engine: search.EngineRG, Matches: []search.Match{
		{Path: "a.go", Line: 5, Text: "x := 1", Before: []search.Line{{Line: 3, Text: "// c"}, {Line: 4, Text: ""}}, After: []search.Line{{Line: 6, Text: "}"}}},
		{Path: "a.go", Line: 9, Text: "x++"},
		{Path: "/abs/b.go", Line: 1, Text: "package b"},
	}}
	out := groupMatches(r)
	if len(out.Files) != 2 || len(out.Files[0].Matches) != 2 || out.Files[1].Path != "/abs/b.go" {
		t.Fatalf("grouped %+v", out)
	}
	want := "a.go\n3-// c\n4-\n5:x := 1\n6-}\n--\n9:x++\n\n/abs/b.go\n1:package b"
	if got := renderRG(out, "3 matches"); got != want {
		t.Errorf("renderRG =\n%s\nwant\n%s", got, want)
	}
	if got := renderRG(groupMatches(search.Result{}), "no matches"); got != "[no matches]" {
		t.Errorf("no matches: %q", got)
	}
}

// Glob entries group by directory in the order of each group's newest
// entry; a directory entry ends in "/".
func TestGroupEntries(t *testing.T) {
	now := time.Now()
	r := search.GlobResult{Count: 4, Truncated: true, Entries: []search.Entry{
		{Path: "cmd/hive/main.go", ModTime: now},
		{Path: "go.mod", ModTime: now.Add(-time.Second)},
		{Path: "cmd/hive/testdata", ModTime: now.Add(-2 * time.Second), IsDir: true},
		{Path: "README.md", ModTime: now.Add(-3 * time.Second)},
	}}
	out := groupEntries(r)
	if len(out.Dirs) != 2 || out.Dirs[0].Dir != "cmd/hive/" || out.Dirs[1].Dir != "" || !out.Truncated {
		t.Fatalf("grouped %+v", out)
	}
	want := "cmd/hive/\n  main.go\n  testdata/\n./\n  go.mod\n  README.md\n[4 entries; more exist]"
	if got := renderGlob(out, "4 entries; more exist"); got != want {
		t.Errorf("renderGlob =\n%s\nwant\n%s", got, want)
	}
}

// With context, the answer merges the context of nearby matches as rg -C
// does: no line twice, no matching line shown as context, "--" between
// blocks that are not adjacent; the structured form holds the same lines.
func TestRGContextMerged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("a\nb\nhit3\nhit4\nhit5\nc\nd\ne\nf\ng\nhit11\nh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "g.txt"), []byte("hit1\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// As `rg --heading -n -C2 hit` prints it (files in path order).
	want := "f.txt\n1-a\n2-b\n3:hit3\n4:hit4\n5:hit5\n6-c\n7-d\n--\n9-f\n10-g\n11:hit11\n12-h\n\ng.txt\n1:hit1\n2-x"
	engines := map[string]func(context.Context, search.Options) (search.Result, error){"builtin": search.GrepBuiltin}
	if rg, err := exec.LookPath("rg"); err == nil {
		engines["rg"] = func(ctx context.Context, o search.Options) (search.Result, error) { return search.GrepRG(ctx, rg, o) }
	}
	for name, grep := range engines {
		t.Run(name, func(t *testing.T) {
			r, err := grep(context.Background(), search.Options{Dir: dir, Pattern: "hit", Context: 2})
			if err != nil {
				t.Fatal(err)
			}
			out := groupMatches(r)
			if got := renderRG(out, "5 matches"); got != want {
				t.Errorf("rendered\n%s\nwant\n%s", got, want)
			}
			f := out.Files[0]
			if len(f.Matches) != 4 || len(f.Matches[0].Before) != 2 || len(f.Matches[0].After) != 0 ||
				len(f.Matches[1].Before)+len(f.Matches[1].After) != 0 || len(f.Matches[2].After) != 2 ||
				len(f.Matches[3].Before) != 2 || f.Matches[3].Before[0] != "f" {
				t.Errorf("structured form repeats or drops context: %+v", f.Matches)
			}
		})
	}
	// Without context, no separators.
	r, err := search.GrepBuiltin(context.Background(), search.Options{Dir: dir, Pattern: "hit"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := renderRG(groupMatches(r), "5 matches"), "f.txt\n3:hit3\n4:hit4\n5:hit5\n11:hit11\n\ng.txt\n1:hit1"; got != want {
		t.Errorf("without context:\n%s\nwant\n%s", got, want)
	}
}
