package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// Row 17: every request over the stdio bridge gets an answer with its
// own id, however deeply it nests: a tools/call 9,000 and 12,000 levels
// deep is answered with a JSON-RPC error naming the limit, and the
// session reads on.
func TestRow17DeepRequestsAreAnswered(t *testing.T) {
	dir := newStateDir(t)
	call, in := rawMCP(t, dir, 60*time.Second)
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"row17","version":"1"}}}`)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	answered := 0
	for i, deep := range []string{
		`{"id":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`,
		strings.Repeat(`{"a":`, 12000) + "1" + strings.Repeat("}", 12000),
	} {
		id := 7 + i
		m := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"status","arguments":%s}}`, id, deep))
		e, _ := m["error"].(map[string]any)
		if m["id"] != float64(id) || e == nil || !strings.Contains(fmt.Sprint(e["message"]), "64 levels") {
			t.Errorf("a call nested deep: %v, want an error with id %d naming the 64-level limit", m, id)
			continue
		}
		answered++
		if m := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)); m["id"] != float64(100+i) || m["error"] != nil {
			t.Errorf("a ping after the deep call: %v", m)
		}
	}
	figure(t, 17, "deep nesting: %d of 2 tools/calls nested 9,000 and 12,000 levels deep answered with their ids and the limit; the session read on", answered)
}

// rawMCP runs `hive mcp` (with args) on the state dir dir as a raw
// client: call writes a line and returns the next line read, decoded (a
// line that is not JSON, no line, or none within wait fails the test);
// in is the bridge's stdin.
func rawMCP(t *testing.T, dir string, wait time.Duration, args ...string) (call func(line string) map[string]any, in io.WriteCloser) {
	t.Helper()
	cmd := hivetest.Command(t, dir, append([]string{"mcp"}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		r := bufio.NewReaderSize(outp, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	call = func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case l, ok := <-lines:
			var m map[string]any
			if !ok || json.Unmarshal([]byte(l), &m) != nil {
				t.Fatalf("no answer to a line of %d bytes (%q)", len(line), l)
			}
			return m
		case <-time.After(wait):
			t.Fatalf("no answer within %v to a line of %d bytes", wait, len(line))
		}
		return nil
	}
	return call, in
}
