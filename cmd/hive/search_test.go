package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	state := stateDir(t)
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
	s := connect(t, state, cwd)
	var rg struct {
		Matches []struct {
			Path   string `json:"path"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
			Text   string `json:"text"`
		} `json:"matches"`
		Count     int  `json:"count"`
		Truncated bool `json:"truncated"`
	}
	s.mustCall("terminal_rg", map[string]any{"pattern": `serve\w+\(`, "type": "go"}, &rg)
	var got []string
	for _, m := range rg.Matches {
		got = append(got, m.Path+":"+strings.TrimSpace(m.Text))
	}
	want := "lib/handler.go:func serveHandler() {}|main.go:serveHandler()"
	if strings.Join(got, "|") != want || rg.Count != 2 || rg.Truncated {
		t.Errorf("rg matches %q, want %q", got, want)
	}
	if rg.Matches[0].Line != 3 || rg.Matches[0].Column != 6 {
		t.Errorf("position %d:%d, want 3:6", rg.Matches[0].Line, rg.Matches[0].Column)
	}
	s.mustCall("terminal_rg", map[string]any{"pattern": "serveHandler", "fixed_strings": true, "max_results": 1}, &rg)
	if rg.Count != 1 || !rg.Truncated {
		t.Errorf("max_results 1: %+v", rg)
	}
	if text, isErr := s.call("terminal_rg", map[string]any{"pattern": "a(b"}, nil); !isErr || !strings.Contains(text, "pattern") {
		t.Errorf("bad regex: %q", text)
	}
	var gl struct {
		Paths     []string `json:"paths"`
		Truncated bool     `json:"truncated"`
	}
	s.mustCall("terminal_glob", map[string]any{"pattern": "**/*.go"}, &gl)
	if strings.Join(gl.Paths, ",") != "lib/handler.go,main.go" {
		t.Errorf("glob newest first without ignored and hidden: %v", gl.Paths)
	}
	s.mustCall("terminal_glob", map[string]any{"pattern": "**/*.go", "no_ignore": true, "hidden": true}, &gl)
	if len(gl.Paths) != 4 {
		t.Errorf("glob with no_ignore and hidden: %v", gl.Paths)
	}
}
