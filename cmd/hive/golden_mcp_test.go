package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/hivetools/hive/internal/hivetest"
)

// The MCP surface as a client sees it through a real `hive mcp` bridge,
// as raw JSON-RPC lines: initialize, tools/list, a session of calls, and
// every notification the server pushed meanwhile. Both ways the bridge
// works (handing its stdio to the daemon, and copying bytes) give the same
// transcript, testdata/mcp_session.txtar.
func TestGoldenMCP(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
	}{{"hand-off", nil}, {"copy", []string{"HIVE_BRIDGE_COPY=1"}}} {
		t.Run(tt.name, func(t *testing.T) {
			checkGolden(t, "mcp_session.txtar", mcpTranscript(t, tt.env))
		})
	}
}

// rawSession is an MCP client that speaks JSON-RPC lines to a bridge
// process, one request at a time, and records what it sends and gets.
type rawSession struct {
	t      *testing.T
	in     io.WriteCloser
	n      *normalizer
	arch   *txtar.Archive
	step   int
	answer chan []byte // responses, in the order they arrive
	read   chan error  // the reader's end: nil at EOF

	mu      sync.Mutex
	pushed  [][]byte // notifications (and requests) from the server
	changed chan struct{}
}

// mcpTranscript runs the session and returns its normalized transcript.
func mcpTranscript(t *testing.T, env []string) *txtar.Archive {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	cmd := hivetest.Command(t, state, "mcp")
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = cwd
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawSession{t: t, in: in, n: newNormalizer(state, cwd), answer: make(chan []byte, 16), read: make(chan error, 1), changed: make(chan struct{}, 1)}
	s.arch = &txtar.Archive{Comment: []byte(`What a client sees of hive's MCP surface through a real "hive mcp" bridge:
each request as sent (one JSON-RPC line), the answer to it (pretty-printed),
and at the end every message the server pushed during the session (sorted).
Written by TestGoldenMCP (cmd/hive/golden_mcp_test.go); the normalizer of
cmd/hive/golden_test.go replaces what changes from run to run with
placeholders such as <id1>, <ms>, <time>, <state>, <cwd>, <version>. After a change that is meant:

	go test ./cmd/hive/ -run TestGoldenMCP -update
`)}
	go s.readLoop(out)
	defer func() {
		in.Close()
		// The bridge ends when its stdin does; its stdout with it.
		select {
		case err := <-s.read:
			if err != nil {
				t.Errorf("read the bridge's stdout: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the bridge did not end after its stdin was closed")
			cmd.Process.Kill()
			<-s.read
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("hive mcp: %v", err)
		}
	}()

	s.call("initialize", stable, `{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"experimental":{"claude/channel":{}}},"clientInfo":{"name":"golden","version":"1"}}}`)
	s.notify("initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.call("tools/list", stable, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`)

	var ran struct {
		Result struct {
			StructuredContent struct {
				ID string `json:"id"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	s.decode(s.call("run echo", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run","arguments":{"cmd":"echo hi","wait_seconds":20}}}`), &ran)
	s.call("status", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"status","arguments":{"id":"`+ran.Result.StructuredContent.ID+`"}}}`)
	s.call("terminal_exec", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"terminal_exec","arguments":{"cmd":"echo hello; echo err >&2; exit 3"}}}`)

	// A job that ends in the background: it waits for a line on a FIFO
	// the test writes once the job has been announced, so its start and
	// its end are two events in that order.
	gate := filepath.Join(cwd, "gate")
	mkfifo(t, gate)
	s.decode(s.call("run in the background", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run","arguments":{"cmd":"read -r line < gate; echo \"got $line\"","wait_seconds":0}}}`), &ran)
	bg := ran.Result.StructuredContent.ID
	s.waitPushed("the background job's running loose end", bg+" running")
	openGate(t, gate)
	s.waitPushed("the background job's end on the channel", `"kind":"job","status":"done"`)
	s.waitPushed("the background job's done loose end", bg+" done")
	s.call("get_loose_ends", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_loose_ends","arguments":{}}}`)

	s.call("status of an unknown id", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"status","arguments":{"id":"nosuchjob"}}}`)
	s.call("an unknown tool", volatile, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"nosuchtool","arguments":{}}}`)

	s.mu.Lock()
	pushed := make([]string, len(s.pushed))
	for i, p := range s.pushed {
		pushed[i] = s.n.volatile(indent(t, p))
	}
	s.mu.Unlock()
	sort.Strings(pushed)
	s.arch.Files = append(s.arch.Files, txtar.File{Name: "pushed by the server", Data: []byte(strings.Join(pushed, ""))})
	return s.arch
}

// openGate writes a line to the FIFO gate, which the job reads. The open
// waits for the job to open its end; should the job never do, the test
// opens it itself so nothing stays blocked, and fails.
func openGate(t *testing.T, gate string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(gate, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("go\n")
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write the gate: %v", err)
		}
	case <-time.After(30 * time.Second):
		if r, err := os.OpenFile(gate, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
		t.Fatal("the background job did not open its gate")
	}
}

const (
	stable   = false
	volatile = true
)

func (s *rawSession) readLoop(out io.Reader) {
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				s.read <- fmt.Errorf("a line that is not JSON: %q: %v", line, jerr)
				return
			}
			if m.Method == "" {
				s.answer <- line
			} else {
				s.mu.Lock()
				s.pushed = append(s.pushed, line)
				s.mu.Unlock()
				select {
				case s.changed <- struct{}{}:
				default:
				}
			}
		}
		if err == io.EOF {
			s.read <- nil
			return
		}
		if err != nil {
			s.read <- err
			return
		}
	}
}

// call sends the request format (with its id for %d), records it and the
// answer as the next step, and returns the raw answer.
func (s *rawSession) call(name string, isVolatile bool, format string) []byte {
	s.t.Helper()
	s.step++
	req := fmt.Sprintf(format, s.step)
	norm := s.n.stable
	if isVolatile {
		norm = s.n.volatile
	}
	s.send(fmt.Sprintf("%02d %s.send", s.step, name), req, norm)
	var resp []byte
	select {
	case resp = <-s.answer:
	case err := <-s.read:
		s.t.Fatalf("%s: the bridge's stdout ended (%v) before the answer", name, err)
	case <-time.After(60 * time.Second):
		s.t.Fatalf("%s: no answer within 60 s", name)
	}
	var id struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(resp, &id); err != nil || id.ID != s.step {
		s.t.Fatalf("%s: answer %s, want the answer to id %d", name, resp, s.step)
	}
	s.arch.Files = append(s.arch.Files, txtar.File{Name: fmt.Sprintf("%02d %s.recv", s.step, name), Data: []byte(norm(indent(s.t, resp)))})
	return resp
}

// notify sends a notification (no answer) and records it.
func (s *rawSession) notify(name, msg string) {
	s.t.Helper()
	s.step++
	s.send(fmt.Sprintf("%02d %s.send", s.step, name), msg, s.n.stable)
}

func (s *rawSession) send(section, line string, norm func(string) string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("send %s: %v", section, err)
	}
	s.arch.Files = append(s.arch.Files, txtar.File{Name: section, Data: []byte(norm(line) + "\n")})
}

func (s *rawSession) decode(b []byte, v any) {
	s.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		s.t.Fatalf("decode %s: %v", b, err)
	}
}

// waitPushed waits until the server has pushed a message that contains
// what.
func (s *rawSession) waitPushed(desc, what string) {
	s.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		for _, p := range s.pushed {
			if bytes.Contains(p, []byte(what)) {
				s.mu.Unlock()
				return
			}
		}
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			s.t.Fatalf("timed out waiting for %s (%q); pushed: %s", desc, what, bytes.Join(s.pushed, nil))
		}
	}
}

// indent pretty-prints one JSON line, keeping its keys in their order.
func indent(t *testing.T, line []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, bytes.TrimSpace(line), "", "  "); err != nil {
		t.Fatalf("indent %s: %v", line, err)
	}
	b.WriteByte('\n')
	return b.String()
}
