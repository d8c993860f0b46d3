package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o700)
		if err := os.WriteFile(full, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSearchTools(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, ".git"), 0o700)
	writeTree(t, cwd, map[string]string{
		".gitignore":     "build/\n",
		"main.go":        "package main\n\nfunc main() {\n\tserveHandler()\n}\n",
		"lib/handler.go": "package lib\n\nfunc serveHandler() {}\n",
		"build/out.go":   "func serveHandler() {} // ignored\n",
		".hidden/h.go":   "func serveHandler() {} // hidden\n",
		"docs/readme.md": "serveHandler is documented here\n",
	})
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(cwd, "main.go"), old, old)
	s := hivetest.Connect(t, state, cwd)
	var rg rgAnswer
	s.MustCall("terminal_rg", map[string]any{"pattern": `serve\w+\(`, "type": "go"}, &rg)
	if got, want := strings.Join(rg.lines(), "|"), "lib/handler.go:3:func serveHandler() {}|main.go:4:serveHandler()"; got != want || rg.Count != 2 || rg.Truncated {
		t.Errorf("rg matches %q, want %q", got, want)
	}
	s.MustCall("terminal_rg", map[string]any{"pattern": "serveHandler", "fixed_strings": true, "max_results": 1}, &rg)
	if rg.Count != 1 || !rg.Truncated {
		t.Errorf("max_results 1: %+v", rg)
	}
	s.MustCall("terminal_rg", map[string]any{"pattern": "serveHandler", "fixed_strings": true, "max_count": 1, "context": 1, "no_ignore": true}, &rg)
	if got, want := strings.Join(rg.lines(), "|"), "build/out.go:1:func serveHandler() {} // ignored|docs/readme.md:1:serveHandler is documented here|lib/handler.go:3:func serveHandler() {}|main.go:4:serveHandler()"; got != want {
		t.Errorf("max_count 1: %q, want %q", got, want)
	}
	if f := rg.Files[2]; len(f.Matches[0].Before) != 1 || f.Matches[0].Before[0] != "" {
		t.Errorf("context 1: lib/handler.go before = %q, want the empty line 2", f.Matches[0].Before)
	}
	if text, isErr := s.Call("terminal_rg", map[string]any{"pattern": "x", "max_count": -1}, nil); !isErr || !strings.Contains(text, "max_count") {
		t.Errorf("max_count -1: %q, want an error naming max_count", text)
	}
	if text, isErr := s.Call("terminal_rg", map[string]any{"pattern": "a(b"}, nil); !isErr || !strings.Contains(text, "pattern") {
		t.Errorf("bad regex: %q", text)
	}
	var gl globAnswer
	s.MustCall("terminal_glob", map[string]any{"pattern": "**/*.go"}, &gl)
	if strings.Join(gl.paths(), ",") != "lib/handler.go,main.go" {
		t.Errorf("glob newest first without ignored and hidden: %v", gl.paths())
	}
	s.MustCall("terminal_glob", map[string]any{"pattern": "**/*.go", "no_ignore": true, "hidden": true}, &gl)
	if len(gl.paths()) != 4 {
		t.Errorf("glob with no_ignore and hidden: %v", gl.paths())
	}
}

// rgAnswer is terminal_rg's structured answer.
type rgAnswer struct {
	Files []struct {
		Path    string `json:"path"`
		Matches []struct {
			Line   int      `json:"line"`
			Text   string   `json:"text"`
			Before []string `json:"before"`
		} `json:"matches"`
	} `json:"files"`
	Count     int  `json:"count"`
	Truncated bool `json:"truncated"`
}

// lines renders each match as path:line:text.
func (r rgAnswer) lines() []string {
	var out []string
	for _, f := range r.Files {
		for _, m := range f.Matches {
			out = append(out, fmt.Sprintf("%s:%d:%s", f.Path, m.Line, strings.TrimSpace(m.Text)))
		}
	}
	return out
}

// globAnswer is terminal_glob's structured answer.
type globAnswer struct {
	Dirs []struct {
		Dir   string   `json:"dir"`
		Names []string `json:"names"`
	} `json:"dirs"`
	Truncated bool `json:"truncated"`
}

// paths lists the entries' paths in the answer's order.
func (g globAnswer) paths() []string {
	var out []string
	for _, d := range g.Dirs {
		for _, n := range d.Names {
			out = append(out, d.Dir+n)
		}
	}
	return out
}

// TestSearchPathsAsGiven: terminal_rg and terminal_glob answer absolute
// paths when given an absolute path and relative ones when given a
// relative path (or none), the same over stdio (whose session dir is the
// bridge's) and over HTTP (whose session dir is the daemon's).
func TestSearchPathsAsGiven(t *testing.T) {
	state := hivetest.StateDir(t)
	tree := t.TempDir()
	writeTree(t, tree, map[string]string{"src/a/x.go": "package a // needle\n", "src/b.go": "package b // needle\n"})
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	// The stdio session runs in tree; the daemon's dir is elsewhere, so
	// HTTP answers to a relative path are relative to the daemon's dir.
	stdio := hivetest.Connect(t, state, tree)
	cs := connectHTTP(t, "http://"+addr+"/mcp", httpToken(t, state))
	viaHTTP := func(name string, args map[string]any, out any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s over http: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	abs := filepath.Join(tree, "src")
	wantAbs := []string{filepath.ToSlash(filepath.Join(abs, "a", "x.go")), filepath.ToSlash(filepath.Join(abs, "b.go"))}
	for _, via := range []struct {
		name string
		call func(string, map[string]any, any)
	}{{"stdio", func(n string, a map[string]any, o any) { stdio.MustCall(n, a, o) }}, {"http", viaHTTP}} {
		var rg rgAnswer
		via.call("terminal_rg", map[string]any{"pattern": "needle", "path": abs}, &rg)
		var got []string
		for _, f := range rg.Files {
			got = append(got, filepath.ToSlash(f.Path))
		}
		if strings.Join(got, ",") != strings.Join(wantAbs, ",") {
			t.Errorf("%s: rg absolute path: %v, want %v", via.name, got, wantAbs)
		}
		var gl globAnswer
		via.call("terminal_glob", map[string]any{"pattern": "**/*.go", "path": abs}, &gl)
		got = gl.paths()
		slices.Sort(got)
		if strings.Join(got, ",") != strings.Join(wantAbs, ",") {
			t.Errorf("%s: glob absolute path: %v, want %v", via.name, got, wantAbs)
		}
		via.call("terminal_glob", map[string]any{"pattern": filepath.ToSlash(abs) + "/*.go"}, &gl)
		if got := gl.paths(); len(got) != 1 || got[0] != wantAbs[1] {
			t.Errorf("%s: glob absolute pattern: %v, want [%s]", via.name, got, wantAbs[1])
		}
	}
	// Relative: as given, against the session's dir.
	var rg rgAnswer
	stdio.MustCall("terminal_rg", map[string]any{"pattern": "needle", "path": "./src/"}, &rg)
	if got := rg.lines(); strings.Join(got, ",") != "src/a/x.go:1:package a // needle,src/b.go:1:package b // needle" {
		t.Errorf("stdio: rg relative path: %v", got)
	}
	var gl globAnswer
	stdio.MustCall("terminal_glob", map[string]any{"pattern": "src/**/*.go"}, &gl)
	if got := gl.paths(); len(got) != 2 || !slices.Contains(got, "src/a/x.go") || !slices.Contains(got, "src/b.go") {
		t.Errorf("stdio: glob relative pattern: %v", got)
	}
	daemonDir, err := os.Getwd() // the daemon started from the test's dir
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(daemonDir, abs)
	if err != nil {
		t.Fatal(err)
	}
	viaHTTP("terminal_rg", map[string]any{"pattern": "needle", "path": rel}, &rg)
	if len(rg.Files) != 2 || rg.Files[1].Path != filepath.Join(rel, "b.go") {
		t.Errorf("http: rg relative path %s: %+v", rel, rg.Files)
	}
}
