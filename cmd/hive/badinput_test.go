package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// rawBridge is a `hive mcp` process driven line by line.
type rawBridge struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
	exited chan struct{} // closed when the process exited; then err is its exit
	err    error
}

func startRawBridge(t *testing.T, state string) *rawBridge {
	t.Helper()
	cmd := hivetest.Command(t, state, "mcp")
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &rawBridge{t: t, cmd: cmd, in: in, out: bufio.NewReader(out), stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stderr = b.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.err = cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	b.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if a := b.answer(); !strings.Contains(a, "serverInfo") {
		t.Fatalf("initialize: %s", a)
	}
	b.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return b
}

func (b *rawBridge) send(line string) {
	b.t.Helper()
	if _, err := io.WriteString(b.in, line+"\n"); err != nil {
		b.t.Fatalf("write to the bridge: %v", err)
	}
}

func (b *rawBridge) answer() string {
	b.t.Helper()
	got := make(chan string, 1)
	go func() { l, _ := b.out.ReadString('\n'); got <- l }()
	select {
	case l := <-got:
		if l == "" {
			b.t.Fatalf("the bridge closed its stdout; stderr: %s", b.stderr.String())
		}
		return l
	case <-time.After(20 * time.Second):
		b.t.Fatal("no answer from the bridge within 20 s")
		return ""
	}
}

// wait returns the bridge's exit error once it exits.
func (b *rawBridge) wait() error {
	b.t.Helper()
	select {
	case <-b.exited:
		return b.err
	case <-time.After(20 * time.Second):
		b.t.Fatal("the bridge did not exit within 20 s")
		return nil
	}
}

// One bad line on stdio never ends the session: each gets a JSON-RPC
// error and the next call is served. Closing stdin ends it cleanly: exit
// 0, nothing on stderr.
func TestBridgeBadInputKeepsSession(t *testing.T) {
	state := hivetest.StateDir(t)
	b := startRawBridge(t, state)
	bad := []string{
		"not json at all",
		"[]",
		"\x00",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"run","arguments":{"cmd":"echo hi","wait_seconds":"soon"}}}`,
		`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"s":"` + strings.Repeat("y", 17<<20) + `"}}`,
	}
	for i, line := range bad {
		b.send(line)
		a := b.answer()
		if !strings.Contains(a, `"error"`) && !strings.Contains(a, `"isError":true`) {
			t.Errorf("bad line %d answered %.200s, want an error", i, a)
		}
		b.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run","arguments":{"cmd":"echo ok%d"}}}`, 100+i, i))
		a = b.answer()
		var res struct {
			ID     int `json:"id"`
			Result struct {
				Structured struct {
					Status string `json:"status"`
					Tail   string `json:"stdout_tail"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(a), &res); err != nil || res.ID != 100+i || res.Result.Structured.Tail != fmt.Sprintf("ok%d\n", i) {
			t.Fatalf("after bad line %d the session answered %.300s (%v)", i, a, err)
		}
	}
	b.in.Close()
	if err := b.wait(); err != nil {
		t.Errorf("bridge exit after the client closed stdin: %v; stderr %q", err, b.stderr.String())
	}
	if b.stderr.Len() != 0 {
		t.Errorf("bridge stderr after a clean end: %q", b.stderr.String())
	}
}

// When the daemon ends a bridge's session, the bridge says why on stderr
// and exits non-zero: the daemon stopping (SIGTERM), or dying (SIGKILL).
func TestBridgeSaysWhyTheSessionEnded(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		want string
	}{
		{syscall.SIGTERM, "stopping"},
		{syscall.SIGKILL, "died"},
	} {
		if tt.sig == syscall.SIGTERM && os.Getenv("HIVE_BRIDGE_COPY") == "1" {
			// A bridge that forwards bytes cannot be told why; it says
			// what it can see.
			tt.want = "stopped or died"
		}
		t.Run(tt.sig.String(), func(t *testing.T) {
			state := hivetest.StateDir(t)
			hivetest.StartDaemon(t, state)
			b := startRawBridge(t, state)
			hivetest.Signal(hivetest.DaemonPid(state), tt.sig)
			err := b.wait()
			if err == nil {
				t.Fatalf("bridge exited 0 after the daemon got %v", tt.sig)
			}
			if msg := b.stderr.String(); !strings.Contains(msg, tt.want) {
				t.Errorf("bridge stderr %q, want it to say %q", msg, tt.want)
			}
		})
	}
}

// A client that writes its calls and closes its input at once still gets
// every answer, then the bridge exits 0.
func TestBridgeAnswersCallsSentBeforeEOF(t *testing.T) {
	state := hivetest.StateDir(t)
	cmd := hivetest.Command(t, state, "mcp")
	cmd.Dir = t.TempDir()
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"batch","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	const calls = 5
	for i := 1; i <= calls; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"run","arguments":{"cmd":"sleep 0.2; echo call%d"}}}`+"\n", i, i)
	}
	cmd.Stdin = strings.NewReader(in.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridge: %v; stderr %q", err, stderr.String())
	}
	for i := 1; i <= calls; i++ {
		if !strings.Contains(string(out), fmt.Sprintf(`"id":%d,`, i)) || !strings.Contains(string(out), fmt.Sprintf("call%d", i)) {
			t.Errorf("no answer to call %d in %d bytes of output", i, len(out))
		}
	}
}
