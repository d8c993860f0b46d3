package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// answer is the part of a tools/call result the byte benchmark reads:
// both forms (structuredContent in a structured session, the text block
// alone in a text one).
type answer struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Structured json.RawMessage `json:"structuredContent"`
	IsError    bool            `json:"isError"`
}

func (s *rawSession) tool(name string, args any) (answer, error) {
	a, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	raw, err := s.call("tools/call", string(a))
	if err != nil {
		return answer{}, err
	}
	var res answer
	if err := json.Unmarshal(raw, &res); err != nil {
		return answer{}, err
	}
	if res.IsError {
		return res, fmt.Errorf("%s: tool error %s", name, raw)
	}
	return res, nil
}

// BenchmarkAnswerBytes measures what hive's answers cost on the wire
// (the JSON-RPC line the bridge writes, as an agent's client receives
// it) against the same commands run raw in the same run, for both answer
// forms (structured: the default; text: --answers text):
//
//   - exec: terminal_exec of `seq 1 200000` (1 288 895 B of output)
//     against the 256 KiB it may show inline: exec-B and
//     exec-vs-inline (answer / 256 KiB; target ≤ 1.2 + 2 KB);
//   - page: the whole output paged back with terminal_output_get at the
//     default page size: page-ratio = bytes answered / output bytes
//     (target ≤ 1.2);
//   - rg: terminal_rg of `os.Getenv(` (fixed) in $GOROOT/src against
//     `rg --no-heading -n` of the same: rg-ratio (target ≤ 1.2);
//   - glob: terminal_glob `**/*.go` in $GOROOT/src/net against
//     `rg --files -g '*.go'` of the same: glob-ratio.
//
// Each side's result is checked: the same output bytes, the same matches,
// the same paths.
func BenchmarkAnswerBytes(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	rgBin, err := exec.LookPath("rg")
	if err != nil {
		b.Skip("rg is not on PATH: no baseline for terminal_rg")
	}
	d := startDaemon(b)
	for _, form := range []string{"structured", "text"} {
		b.Run("answers="+form, func(b *testing.B) {
			s := connectRaw(b, d, "--answers", form)
			for i := 0; i < b.N; i++ {
				if err := answerBytes(b, s, form, src, rgBin); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func answerBytes(b *testing.B, s *rawSession, form, src, rgBin string) error {
	seq, err := exec.Command("seq", "1", "200000").Output()
	if err != nil {
		return err
	}
	res, err := s.tool("terminal_exec", map[string]any{"cmd": "seq 1 200000"})
	if err != nil {
		return err
	}
	execSent := s.sent
	var env struct {
		Stdout       string  `json:"stdout"`
		Truncated    int64   `json:"stdout_truncated_bytes"`
		OutputHandle *string `json:"output_handle"`
	}
	handle := ""
	if form == "structured" {
		if err := json.Unmarshal(res.Structured, &env); err != nil {
			return err
		}
		if env.OutputHandle == nil || env.Truncated == 0 || !strings.HasPrefix(env.Stdout, "1\n2\n3\n") {
			return fmt.Errorf("exec: want a truncated stdout with a handle: %.200s", res.Structured)
		}
		handle = *env.OutputHandle
	} else {
		if len(res.Structured) > 0 {
			return fmt.Errorf("exec: a text session got structuredContent")
		}
		t := res.Content[0].Text
		i := strings.Index(t, `terminal_output_get("`)
		if i < 0 || !strings.Contains(t, "\n1\n2\n3\n") {
			return fmt.Errorf("exec: want the output and a handle in the text: %.300s", t)
		}
		handle, _, _ = strings.Cut(t[i+len(`terminal_output_get("`):], `"`)
	}
	// Page it all back.
	var paged bytes.Buffer
	pageSent := 0
	for off := int64(0); ; {
		res, err := s.tool("terminal_output_get", map[string]any{"output_handle": handle, "since_offset": off})
		if err != nil {
			return err
		}
		pageSent += s.sent
		var p struct {
			Data string `json:"data"`
			Next int64  `json:"next_offset"`
			EOF  bool   `json:"eof"`
		}
		if form == "structured" {
			if err := json.Unmarshal(res.Structured, &p); err != nil {
				return err
			}
		} else {
			// "[stdout bytes [A, B); more from since_offset=B]\n" + data
			head, data, _ := strings.Cut(res.Content[0].Text, "\n")
			var a int64
			if _, err := fmt.Sscanf(head, "[stdout bytes [%d, %d)", &a, &p.Next); err != nil {
				return fmt.Errorf("page header %q: %v", head, err)
			}
			p.Data, p.EOF = data, strings.Contains(head, "the end")
		}
		paged.WriteString(p.Data)
		if p.EOF {
			break
		}
		off = p.Next
	}
	if !bytes.Equal(paged.Bytes(), seq) {
		return fmt.Errorf("paged %d bytes, not the %d of seq", paged.Len(), len(seq))
	}
	// rg.
	want, err := exec.Command(rgBin, "--no-heading", "-n", "--fixed-strings", "os.Getenv(", src).Output()
	if err != nil {
		return fmt.Errorf("rg baseline: %v", err)
	}
	wantN := bytes.Count(want, []byte("\n"))
	res, err = s.tool("terminal_rg", map[string]any{"pattern": "os.Getenv(", "fixed_strings": true, "path": src, "max_results": 5000})
	if err != nil {
		return err
	}
	rgSent := s.sent
	if got := countMatches(form, res); got != wantN {
		return fmt.Errorf("terminal_rg: %d matches, rg %d", got, wantN)
	}
	// glob.
	net := filepath.Join(src, "net")
	files, err := exec.Command(rgBin, "--files", "-g", "*.go", net).Output()
	if err != nil {
		return fmt.Errorf("rg --files baseline: %v", err)
	}
	filesN := bytes.Count(files, []byte("\n"))
	res, err = s.tool("terminal_glob", map[string]any{"pattern": "**/*.go", "path": net, "max_results": 5000})
	if err != nil {
		return err
	}
	globSent := s.sent
	if got := countEntries(form, res); got != filesN {
		return fmt.Errorf("terminal_glob: %d entries, rg --files %d", got, filesN)
	}
	const inline = 256 << 10
	b.ReportMetric(float64(execSent), "exec-B")
	b.ReportMetric(float64(execSent)/inline, "exec-vs-inline")
	b.ReportMetric(float64(pageSent)/float64(len(seq)), "page-ratio")
	b.ReportMetric(float64(rgSent), "rg-B")
	b.ReportMetric(float64(len(want)), "rg-raw-B")
	b.ReportMetric(float64(rgSent)/float64(len(want)), "rg-ratio")
	b.ReportMetric(float64(wantN), "rg-matches")
	b.ReportMetric(float64(globSent)/float64(len(files)), "glob-ratio")
	return nil
}

func countMatches(form string, res answer) int {
	if form == "structured" {
		var r struct {
			Files []struct {
				Matches []json.RawMessage `json:"matches"`
			} `json:"files"`
		}
		json.Unmarshal(res.Structured, &r)
		n := 0
		for _, f := range r.Files {
			n += len(f.Matches)
		}
		return n
	}
	n := 0
	for _, l := range strings.Split(res.Content[0].Text, "\n") {
		// "line:text" under each path line.
		if i := strings.IndexByte(l, ':'); i > 0 && strings.Trim(l[:i], "0123456789") == "" {
			n++
		}
	}
	return n
}

func countEntries(form string, res answer) int {
	if form == "structured" {
		var r struct {
			Dirs []struct {
				Names []string `json:"names"`
			} `json:"dirs"`
		}
		json.Unmarshal(res.Structured, &r)
		n := 0
		for _, d := range r.Dirs {
			n += len(d.Names)
		}
		return n
	}
	return strings.Count(res.Content[0].Text, "\n  ")
}
