package search

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	randNames = []string{"a", "b", "d1", "d2", "d3", "sub", "tmp", "build", ".h", ".hx", "x.tmp",
		"keep1.log", "a.log", "top1", "fa.txt", "b.go", "z9", "c.md", "#n", "m~", "é.go", "a b.txt"}
	randRules = []string{"*.log", "!keep*.log", "build/", "/top*", "a/**/b", "**/tmp", "*.tmp", "!x.tmp",
		"d1/", "!d1/", "f?.txt", "[ab]*.go", "*.{md,txt}", "/d2/*.go", "d3/**", ".h*", "!.hx", "sub/d*/",
		`\#*`, "**/z*", "*~", "!*.go", "a", "!b", "d2/", "/sub", "*", "!*/", "# comment", "é*"}
	randPatterns = []string{"x", `x\s+\d+`, "x|plain", `(?i)X AGAIN`, `^p`, `\d$`, "again|x 1", `[0-9]{2}`, "a", `\bx`, "", `(pl|ag)ai`}
	randGlobs    = []string{"*.go", "!*.log", "d1/**", "!d2", ".h*", "*.{md,txt}", "!sub/**", "**/b*", "z9"}
)

// randomTree writes a small random tree under root/outer/repo and returns
// the repo directory.
func randomTree(t *testing.T, r *rand.Rand) string {
	t.Helper()
	outer := filepath.Join(t.TempDir(), "outer")
	repo := filepath.Join(outer, "repo")
	pick := func(pool []string) string { return pool[r.IntN(len(pool))] }
	rules := func() string {
		var lines []string
		for range 1 + r.IntN(4) {
			lines = append(lines, pick(randRules))
		}
		return strings.Join(lines, "\n") + "\n"
	}
	if r.IntN(3) == 0 {
		writeFile(t, outer, ".ignore", []byte(rules()))
	}
	if r.IntN(10) < 7 {
		writeFile(t, repo, ".git/HEAD", []byte("x\n"))
		if r.IntN(3) == 0 {
			writeFile(t, repo, ".git/info/exclude", []byte(rules()))
		}
	}
	var fill func(dir string, depth int)
	fill = func(dir string, depth int) {
		for _, f := range []string{".gitignore", ".ignore", ".rgignore"} {
			if r.IntN(4) == 0 {
				writeFile(t, dir, f, []byte(rules()))
			}
		}
		if depth > 0 && r.IntN(12) == 0 {
			writeFile(t, dir, ".git/HEAD", []byte("x\n"))
		}
		for range 1 + r.IntN(4) {
			content := fmt.Sprintf("x %d\nplain\nx again\n", r.IntN(100))
			writeFile(t, dir, pick(randNames), []byte(content))
		}
		if depth < 3 {
			for range r.IntN(3) {
				sub := filepath.Join(dir, pick(randNames))
				if fi, err := os.Stat(sub); err == nil && !fi.IsDir() {
					continue
				}
				fill(sub, depth+1)
			}
		}
	}
	fill(repo, 0)
	return repo
}

func TestRandomTreesAgree(t *testing.T) {
	rg := rgPath(t)
	for seed := range uint64(25) {
		r := rand.New(rand.NewPCG(seed, 7))
		repo := randomTree(t, r)
		checkGlobMatchesRGFiles(t, rg, repo, fmt.Sprintf("seed %d ", seed))
		for i := range 4 {
			o := Options{Pattern: randPatterns[r.IntN(len(randPatterns))], Dir: repo, Hidden: i&1 == 1,
				MaxResults: 1 + r.IntN(40), Context: r.IntN(3), IgnoreCase: r.IntN(3) == 0, FixedStrings: r.IntN(5) == 0}
			for range r.IntN(3) {
				o.Globs = append(o.Globs, randGlobs[r.IntN(len(randGlobs))])
			}
			if r.IntN(4) == 0 {
				o.Type = "go"
			}
			if _, diff := compareEngines(t, rg, o); diff != "" {
				t.Errorf("seed %d options %+v:\n%s", seed, o, diff)
			}
		}
	}
}
