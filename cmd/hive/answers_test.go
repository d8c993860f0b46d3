package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// rawResult calls a tool and returns its structuredContent as JSON ("" if
// absent) and its text blocks.
func rawResult(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (structured, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s(%v): %v %+v", name, args, err, res)
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		structured = string(b)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	return structured, text
}

// bulkCalls are calls whose answers carry bulk, each with a marker that
// appears once in the output, matches or page they answer.
func bulkCalls(t *testing.T, cwd string) []struct {
	name string
	args map[string]any
	mark string
} {
	writeTree(t, cwd, map[string]string{"src/found-once-f1.go": "package x // needle-m4rk\n"})
	return []struct {
		name string
		args map[string]any
		mark string
	}{
		{"terminal_exec", map[string]any{"cmd": "echo exec-m4rk-out; echo exec-m4rk-err >&2"}, "exec-m4rk-out"},
		{"terminal_exec", map[string]any{"cmd": "echo exec-m4rk-out; echo exec-m4rk-err >&2"}, "exec-m4rk-err"},
		{"run", map[string]any{"cmd": "echo run-m4rk", "wait_seconds": 10}, "run-m4rk"},
		{"terminal_rg", map[string]any{"pattern": "needle-m4rk"}, "x // needle-m4rk"},
		{"terminal_glob", map[string]any{"pattern": "**/*.go"}, "found-once-f1.go"},
	}
}

// TestAnswersCarryBulkOnce: in the default (structured) form, through a
// real bridge, the output, matches and pages are in structuredContent and
// nowhere in the text block; in the text form (--answers text) tools/list
// has no output schemas, answers have no structuredContent, and the text
// block has the bulk, once.
func TestAnswersCarryBulkOnce(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	calls := bulkCalls(t, cwd)
	for _, form := range []string{"structured", "text"} {
		t.Run(form, func(t *testing.T) {
			var args []string
			if form == "text" {
				args = []string{"--answers", "text"}
			}
			s := hivetest.Connect(t, state, cwd, args...)
			list, err := s.ListTools(t.Context(), &mcp.ListToolsParams{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range list.Tools {
				if has := tool.OutputSchema != nil; has != (form == "structured") {
					t.Errorf("%s: output schema present = %v", tool.Name, has)
				}
			}
			for _, c := range calls {
				sc, text := rawResult(t, s.ClientSession, c.name, c.args)
				inSC, inText := strings.Count(sc, c.mark), strings.Count(text, c.mark)
				switch {
				case form == "structured" && (inSC != 1 || inText != 0):
					t.Errorf("%s: %q %d times in structuredContent, %d in the text %q; want 1 and 0", c.name, c.mark, inSC, inText, text)
				case form == "text" && (sc != "" || inText != 1):
					t.Errorf("%s: structuredContent %q, %q %d times in the text %q; want none and 1", c.name, sc, c.mark, inText, text)
				}
			}
			// A truncated output: the head and tail once, the rest once
			// more page by page, and nothing of it in the text blocks.
			sc, text := rawResult(t, s.ClientSession, "terminal_exec", map[string]any{"cmd": "seq 1 60000", "max_output_kb": 64})
			var env struct {
				Stdout string  `json:"stdout"`
				Handle *string `json:"output_handle"`
			}
			if form == "structured" {
				json.Unmarshal([]byte(sc), &env)
				if env.Handle == nil || !strings.Contains(env.Stdout, "\n59999\n") || strings.Contains(text, "59999") || len(text) > 300 {
					t.Fatalf("truncated exec: handle %v, text %q", env.Handle, text)
				}
			} else {
				i := strings.Index(text, `terminal_output_get("`)
				if sc != "" || i < 0 || strings.Count(text, "\n59999\n") != 1 {
					t.Fatalf("truncated exec in text form: structured %q, text %.200q", sc, text)
				}
				h, _, _ := strings.Cut(text[i+len(`terminal_output_get("`):], `"`)
				env.Handle = &h
			}
			sc, text = rawResult(t, s.ClientSession, "terminal_output_get", map[string]any{"output_handle": *env.Handle, "since_offset": 100000, "max_kb": 1})
			const inPage = "\n18600\n" // at offset 100 487, left out inline (the head and tail are 32 KiB each)
			if form == "structured" {
				var page struct {
					Data string `json:"data"`
				}
				json.Unmarshal([]byte(sc), &page)
				if !strings.Contains(page.Data, inPage) || strings.Contains(text, inPage) || !strings.Contains(text, "since_offset=101024") {
					t.Errorf("page: structured %.80q, text %q", sc, text)
				}
			} else if sc != "" || strings.Count(text, inPage) != 1 || !strings.HasPrefix(text, "[stdout bytes [100000, 101024); more from since_offset=101024]\n") {
				t.Errorf("page in text form: structured %q, text %.120q", sc, text)
			}
		})
	}
	if out, err := hivetest.Run(t, state, "mcp", "--answers", "bogus"); err == nil || !strings.Contains(out, `answers: unknown form "bogus"`) {
		t.Errorf("hive mcp --answers bogus: %v %q, want an error naming answers", err, out)
	}
}

// TestHTTPAnswersForm: ?answers=text gives the text form over HTTP;
// another value is refused with 400 naming it.
func TestHTTPAnswersForm(t *testing.T) {
	state := hivetest.StateDir(t)
	addr := startHTTPDaemon(t, state, "127.0.0.1:0")
	tok := httpToken(t, state)
	a := do(t, "POST", "http://"+addr+"/mcp?answers=json", auth(tok), initBody)
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, `answers: unknown form "json"`) {
		t.Errorf("?answers=json: status %d body %q, want 400 naming it", a.status, a.body)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o600)
	for _, form := range []string{"", "text"} {
		cs := connectHTTP(t, "http://"+addr+"/mcp?answers="+form, tok)
		sc, text := rawResult(t, cs, "terminal_exec", map[string]any{"cmd": "echo http-m4rk"})
		if form == "text" && (sc != "" || strings.Count(text, "http-m4rk") != 1) {
			t.Errorf("text form over http: structured %q, text %q", sc, text)
		}
		if form == "" && (strings.Count(sc, "http-m4rk") != 1 || strings.Contains(text, "http-m4rk")) {
			t.Errorf("structured form over http: structured %q, text %q", sc, text)
		}
	}
}
