package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/hivetools/hive/internal/cli"
)

// Golden transcripts: TestGoldenMCP and TestGoldenCLI record what hive
// answers (the MCP surface over the stdio bridge, the CLI's human output)
// as txtar files in testdata/ and fail when an answer changes. After a
// change that is meant, regenerate them and review the diff:
//
//	go test ./cmd/hive/ -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/ with what hive answers now")

// checkGolden compares the archive a test recorded with testdata/name, or
// writes it there under -update. A difference fails the test with a diff
// of each section that differs.
func checkGolden(t *testing.T, name string, got *txtar.Archive) {
	t.Helper()
	path := filepath.Join("testdata", name)
	gotb := txtar.Format(got)
	if *update {
		if err := os.WriteFile(path, gotb, 0o644); err != nil {
			t.Fatalf("write golden %s: %v", path, err)
		}
		return
	}
	wantb, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s: %v (create it with: go test ./cmd/hive/ -run %s -update)", path, err, topName(t))
	}
	if bytes.Equal(wantb, gotb) {
		return
	}
	want := txtar.Parse(wantb)
	var report strings.Builder
	if want.Comment != nil && !bytes.Equal(want.Comment, got.Comment) {
		fmt.Fprintf(&report, "the comment differs:\n%s", lineDiff(string(want.Comment), string(got.Comment)))
	}
	files := func(a *txtar.Archive) map[string]string {
		m := map[string]string{}
		for _, f := range a.Files {
			m[f.Name] = string(f.Data)
		}
		return m
	}
	wm, gm := files(want), files(got)
	for _, f := range want.Files {
		if g, ok := gm[f.Name]; !ok {
			fmt.Fprintf(&report, "-- %s -- is no longer recorded\n", f.Name)
		} else if g != string(f.Data) {
			fmt.Fprintf(&report, "-- %s -- differs (- golden, + now):\n%s", f.Name, lineDiff(string(f.Data), g))
		}
	}
	for _, f := range got.Files {
		if _, ok := wm[f.Name]; !ok {
			fmt.Fprintf(&report, "-- %s -- is new:\n%s", f.Name, f.Data)
		}
	}
	if report.Len() == 0 {
		report.WriteString("the sections' order differs\n")
	}
	t.Errorf("%s differs from what hive answers now.\n%sIf the change is meant, regenerate it and review the diff: go test ./cmd/hive/ -run %s -update",
		path, report.String(), topName(t))
}

// topName is the name of the top-level test of t: what -run needs to
// regenerate the whole file.
func topName(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

// lineDiff shows the lines of want and got that differ (a longest common
// subsequence of lines; the common ones are left out).
func lineDiff(want, got string) string {
	a, b := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	// lcs[i][j]: the length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(sign, s string) {
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		out.WriteString(sign + s)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			line("-", a[i])
			i++
		default:
			line("+", b[j])
			j++
		}
	}
	return out.String()
}

// normalizer replaces what changes from run to run in a transcript with
// stable placeholders, so that two runs record the same file. What it
// replaces, in this order:
//
//   - literals: the state dir (<state>), the session's working directory
//     (<cwd>), the hive version (<version>, cli.Version) and the Go
//     version (<go>);
//
// and, in volatile text only (tool answers, job tables; never help texts,
// tool descriptions or the server's instructions, where a number or a
// duration is part of what is documented):
//
//   - times: RFC 3339 (<time>), "2006-01-02 15:04" (<time>), a clock
//     15:04:05 (<clock>), an age as ps tells it, "3 seconds ago" (<ago>);
//   - JSON numbers of volatile fields: "pid" (<pid>), "*_ms" (<ms>),
//     "*_at" (<time>, unix seconds), "memory*_bytes" (<bytes>);
//   - memory sizes in a table: 18MiB, 4.0KiB (<size>);
//   - "pid N" in text (pid <pid>);
//   - what the machine allows of escape tracking, in hive version
//     ("escape tracking <escape-tracking>");
//   - durations: 5ms, 1.25s, 3m12s, 2h05m, 3d4h (<dur>);
//   - job ids, 8 hex digits as a word: <id1>, <id2>... in the order of
//     their first appearance in the transcript (so one job keeps its
//     placeholder from section to section).
//
// Everything else stays: exit codes, byte counts, states, texts. A
// placeholder that replaces a table cell (a token followed by two or more
// spaces) keeps the columns where they were.
type normalizer struct {
	literals []string // old, new pairs, for strings.NewReplacer
	ids      map[string]string
}

func newNormalizer(state, cwd string) *normalizer {
	n := &normalizer{ids: map[string]string{}}
	for _, p := range []struct{ path, name string }{{state, "<state>"}, {cwd, "<cwd>"}} {
		if p.path == "" {
			continue
		}
		n.literals = append(n.literals, p.path, p.name)
		if real, err := filepath.EvalSymlinks(p.path); err == nil && real != p.path {
			n.literals = append(n.literals, real, p.name)
		}
	}
	n.literals = append(n.literals, cli.Version, "<version>", runtime.Version(), "<go>")
	return n
}

var (
	rfc3339Re  = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	dateTimeRe = regexp.MustCompile(`\b\d{4}-\d\d-\d\d \d\d:\d\d\b`)
	clockRe    = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
	agoRe      = regexp.MustCompile(`\b(Less than a second|About an? (minute|hour)|\d+ (second|minute|hour|day|week|month|year)s?) ago\b`)
	pidFieldRe = regexp.MustCompile(`("pid": ?)\d+`)
	msFieldRe  = regexp.MustCompile(`("\w+_ms": ?)\d+`)
	atFieldRe  = regexp.MustCompile(`("\w+_at": ?)\d+`)
	memFieldRe = regexp.MustCompile(`("memory\w*_bytes": ?)\d+`)
	sizeRe     = regexp.MustCompile(`\b\d+(\.\d)?(B|KiB|MiB|GiB)\b`)
	pidTextRe  = regexp.MustCompile(`\bpid \d+`)
	escapeRe   = regexp.MustCompile(`(?m)^escape tracking \S+$`)
	durRe      = regexp.MustCompile(`\b((\d+d)?(\d+h)?(\d+m)?\d+(\.\d+)?(ns|µs|us|ms|s)|(\d+d)?\d+h(\d+m)?|\d+d\d+h)\b`)
	idRe       = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
)

// stable normalizes text that holds no volatile values but the literals.
func (n *normalizer) stable(s string) string {
	return strings.NewReplacer(n.literals...).Replace(s)
}

// volatile normalizes text that carries times, pids, durations and ids.
func (n *normalizer) volatile(s string) string {
	s = n.stable(s)
	s = replaceCells(s, rfc3339Re, func(string) string { return "<time>" })
	s = replaceCells(s, dateTimeRe, func(string) string { return "<time>" })
	s = replaceCells(s, clockRe, func(string) string { return "<clock>" })
	s = replaceCells(s, agoRe, func(string) string { return "<ago>" })
	s = pidFieldRe.ReplaceAllString(s, "${1}<pid>")
	s = msFieldRe.ReplaceAllString(s, "${1}<ms>")
	s = atFieldRe.ReplaceAllString(s, "${1}<time>")
	s = memFieldRe.ReplaceAllString(s, "${1}<bytes>")
	s = replaceCells(s, sizeRe, func(string) string { return "<size>" })
	s = replaceCells(s, pidTextRe, func(string) string { return "pid <pid>" })
	s = escapeRe.ReplaceAllString(s, "escape tracking <escape-tracking>")
	s = replaceCells(s, durRe, func(string) string { return "<dur>" })
	s = replaceCells(s, idRe, func(id string) string {
		p, ok := n.ids[id]
		if !ok {
			p = fmt.Sprintf("<id%d>", len(n.ids)+1)
			n.ids[id] = p
		}
		return p
	})
	return s
}

// replaceCells replaces each match of re in s with repl(match). A match
// followed by two or more spaces is a table cell: the spaces are resized
// so that what follows stays in its column.
func replaceCells(s string, re *regexp.Regexp, repl func(string) string) string {
	var out strings.Builder
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if m[0] < last {
			continue // inside the padding taken by the previous match
		}
		out.WriteString(s[last:m[0]])
		r := repl(s[m[0]:m[1]])
		out.WriteString(r)
		end := m[1]
		pad := 0
		for end+pad < len(s) && s[end+pad] == ' ' {
			pad++
		}
		if pad >= 2 {
			out.WriteString(strings.Repeat(" ", max(2, m[1]-m[0]+pad-len(r))))
			end += pad
		}
		last = end
	}
	out.WriteString(s[last:])
	return out.String()
}
