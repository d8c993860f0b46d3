package reliability

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// Row 22: a session of text answers (`hive mcp --answers text`) calls
// tools that fail before any handler runs: an unknown tool, a name that
// is not a string, a call with no params. Each gets an error answer with
// its id, the session reads on, and the daemon lives (it died of the
// first: the text form's middleware read the result an error has not).
func TestRow22TextSessionFailedCalls(t *testing.T) {
	dir := newStateDir(t)
	call, in := rawMCP(t, dir, 30*time.Second, "--answers", "text")
	call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"row22","version":"1"}}}`)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	pid := hivetest.DaemonPid(dir)
	if pid == 0 {
		t.Fatal("no daemon runs")
	}
	answered := 0
	for i, params := range []string{`{"name":"no_such_tool","arguments":{}}`, `{"name":7}`, `null`} {
		id := 10 + i
		m := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
		if m["id"] != float64(id) || m["error"] == nil {
			t.Errorf("tools/call with params %s: %v, want an error answer with id %d", params, m, id)
			continue
		}
		if m := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)); m["id"] != float64(100+i) || m["error"] != nil {
			t.Errorf("a ping after params %s: %v", params, m)
			continue
		}
		answered++
	}
	m := call(`{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"terminal_exec","arguments":{"cmd":"echo alive"}}}`)
	if r, _ := m["result"].(map[string]any); r == nil || !strings.Contains(fmt.Sprint(r["content"]), "alive") {
		t.Errorf("terminal_exec after the failed calls: %v", m)
	}
	// The same daemon answered (a dead one's bridge gets no answer; a new
	// one would hold the lock with another pid).
	if now := hivetest.DaemonPid(dir); now != pid {
		t.Errorf("the daemon (pid %d) did not live through the calls: the lock now names pid %d", pid, now)
	}
	figure(t, 22, "a text-answers session: %d of 3 tools/calls that fail before a handler (unknown tool, name not a string, no params) answered with an error and their ids; the session read on; the daemon lived", answered)
}
