package tools

import (
	"testing"
	"time"

	"github.com/hivetools/hive/internal/search"
)

// The text form renders matches as rg --heading -n does, context lines
// numbered from the match, each path once.
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
	want := "a.go\n3-// c\n4-\n5:x := 1\n6-}\n9:x++\n\n/abs/b.go\n1:package b"
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
