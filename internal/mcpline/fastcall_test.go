package mcpline

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readCall takes the commonest calls, as clients write them, and leaves
// everything unusual to encoding/json; what it takes it reads as
// decodeMessage and goDirect do (checkReadCall, FuzzDecodeMessageAgrees).
func TestReadCall(t *testing.T) {
	for _, tc := range []struct {
		line string
		take bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"terminal_exec","arguments":{"cmd":"true"}}}`, true},
		{`{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "run", "arguments": {"cmd": "echo \"x\"", "wait_seconds": 0}}}`, true},
		{"{\"id\":\"c-1\",\"params\":{\"arguments\":[1,2],\"name\":\"x\"},\"method\":\"tools/call\",\"jsonrpc\":\"2.0\"}\r\n", true},
		{`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":null}}`, true},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments": 5 }}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":-1,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1234567890123456,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":"a\u0041","method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","Id":1,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}} x`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}`, false},
	} {
		dc, ok := readCall([]byte(tc.line))
		if ok != tc.take {
			t.Errorf("%s: taken %v, want %v", tc.line, ok, tc.take)
			continue
		}
		checkReadCall(t, []byte(tc.line))
		if ok && dc.req.Method != "tools/call" {
			t.Errorf("%s: method %q", tc.line, dc.req.Method)
		}
	}
}

// BenchmarkReadCall: a terminal_exec call read by readCall and by
// decodeMessage and goDirect's decoding of its params, taking turns in
// each iteration: read-ns/op, decode-ns/op and their ratio.
func BenchmarkReadCall(b *testing.B) {
	line := []byte(`{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "terminal_exec", "arguments": {"cmd": "true"}}}`)
	var read, decode time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, ok := readCall(line); !ok {
			b.Fatal("not read")
		}
		t1 := time.Now()
		msg, err := decodeMessage(line)
		if err != nil {
			b.Fatal(err)
		}
		var m map[string]json.RawMessage
		var name string
		if json.Unmarshal(msg.(*jsonrpc.Request).Params, &m) != nil || json.Unmarshal(m["name"], &name) != nil {
			b.Fatal("params")
		}
		read, decode = read+t1.Sub(t0), decode+time.Since(t1)
	}
	b.ReportMetric(float64(read.Nanoseconds())/float64(b.N), "read-ns/op")
	b.ReportMetric(float64(decode.Nanoseconds())/float64(b.N), "decode-ns/op")
	b.ReportMetric(float64(read)/float64(decode), "read/decode")
}
