package mcpline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// nopCloser makes a writer a WriteCloser.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// FuzzLineConn feeds arbitrary bytes to the JSON-RPC line reader. It
// must never panic or stop early: every line is either a message (that
// the go-sdk's decoder reads alike: FuzzDecodeMessageAgrees) or answered
// with a valid JSON-RPC error, and the reader reaches the end of the
// input.
func FuzzLineConn(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]` + "\n",
		"[]\n\x00\nnot json\n",
		`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run","arguments":{"cmd":"echo hi"}}}` + "\r\n\n",
		`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		c := &lineConn{r: bufio.NewReaderSize(bytes.NewReader(in), 64<<10), rc: io.NopCloser(nil), w: nopCloser{&out},
			maxLine: 4096, batches: map[jsonrpc.ID]*batch{}}
		lines := bytes.Count(in, []byte{'\n'}) + 1
		for reads := 0; ; reads++ {
			if reads > 2*lines+len(in) { // every call consumes a line or a batch member
				t.Fatalf("more reads (%d) than the input can hold", reads)
			}
			msg, err := c.Read(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Read: %v (only EOF may end a session)", err)
			}
			switch m := msg.(type) {
			case *jsonrpc.Request:
				if m.IsCall() { // the server answers every call
					c.Write(context.Background(), &jsonrpc.Response{ID: m.ID, Result: json.RawMessage("null")})
				}
			case *jsonrpc.Response:
				if !m.ID.IsValid() {
					t.Fatalf("a response without an id: %#v", m)
				}
			default:
				t.Fatalf("Read returned a %T", msg)
			}
		}
		// Every answer the reader wrote itself is a valid JSON-RPC error
		// (or a batch of them).
		for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte{'\n'}) {
			if len(line) == 0 || bytes.Contains(line, []byte(`"result":null`)) {
				continue // an answer of the fake server above
			}
			var one map[string]any
			var many []map[string]any
			if json.Unmarshal(line, &one) != nil && json.Unmarshal(line, &many) != nil {
				t.Fatalf("answer %q is not JSON", line)
			}
			if one != nil {
				many = []map[string]any{one}
			}
			for _, a := range many {
				if a["jsonrpc"] != "2.0" || a["error"] == nil {
					t.Fatalf("answer %q is not a JSON-RPC error", line)
				}
				if _, ok := a["id"]; !ok {
					t.Fatalf("answer %q has no id", line)
				}
			}
		}
	})
}

// The hand-written decoder agrees with the sdk's on what a message is,
// for single messages: both accept (as the same kind, with the same id)
// or both refuse, except that ours refuses what is not JSON at all
// (a value followed by more bytes) where the sdk's may take it.
func FuzzDecodeMessageAgrees(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":""}`,
		`{"jsonrpc":"2.0","id":"x","result":null}`,
		`{"jsonrpc":"2.0","method":"n"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"terminal_exec","arguments":{"cmd":"true"}}}`,
		`{"jsonrpc": "2.0", "id": "a-1", "method": "tools/call", "params": {"arguments": {"cmd": "echo \"x\" \u00e9", "timeout_sec": 5}, "name": "run"}}`,
		"{\"id\":0 ,\"params\":{\"name\":\"x\",\"arguments\": 12 },\"method\":\"tools/call\",\"jsonrpc\":\"2.0\"}\n",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1,{"a":"}"}],"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"id":2}`,
		`{"jsonrpc":"2.0","id":01,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":nul}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkReadCall(t, in)
		ours, err1 := decodeMessage(in)
		theirs, err2 := jsonrpc.DecodeMessage(in)
		if err1 != nil && err2 == nil && !json.Valid(in) {
			return // the sdk's decoder takes some text that is not JSON (trailing bytes); ours does not
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q: ours %v (%v), the sdk's %v (%v)", in, ours, err1, theirs, err2)
		}
		if err1 != nil {
			return
		}
		switch m := ours.(type) {
		case *jsonrpc.Request:
			if b, ok := theirs.(*jsonrpc.Request); !ok || b.ID != m.ID || b.Method != m.Method {
				t.Fatalf("%q: ours %#v, the sdk's %#v", in, ours, theirs)
			}
		case *jsonrpc.Response:
			if b, ok := theirs.(*jsonrpc.Response); !ok || b.ID != m.ID {
				t.Fatalf("%q: ours %#v, the sdk's %#v", in, ours, theirs)
			}
		}
	})
}

// checkReadCall fails t if readCall reads in otherwise than decodeMessage
// and goDirect's decoding of the params would.
func checkReadCall(t *testing.T, in []byte) {
	t.Helper()
	dc, ok := readCall(in)
	if !ok {
		return
	}
	msg, err := decodeMessage(in)
	r, isReq := msg.(*jsonrpc.Request)
	if err != nil || !isReq || r.ID != dc.req.ID || r.Method != dc.req.Method || !bytes.Equal(r.Params, dc.req.Params) {
		t.Fatalf("%q: readCall %#v, decodeMessage %#v (%v)", in, dc.req, msg, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Params, &m); err != nil {
		t.Fatalf("%q: readCall took params encoding/json refuses: %v", in, err)
	}
	var name string
	if err := json.Unmarshal(m["name"], &name); err != nil || name != dc.name {
		t.Fatalf("%q: name %q, encoding/json's %q (%v)", in, dc.name, name, err)
	}
	if !bytes.Equal(m["arguments"], dc.args) || (m["arguments"] == nil) != (dc.args == nil) {
		t.Fatalf("%q: arguments %q, encoding/json's %q", in, dc.args, m["arguments"])
	}
	for k := range m {
		if k != "name" && k != "arguments" {
			t.Fatalf("%q: readCall took params with %q", in, k)
		}
	}
}
