package mcpline

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineServer serves a small MCP server on a Transport over two real
// pipes; the test writes lines to in and reads lines from out.
func lineServer(t *testing.T) (in io.WriteCloser, out *bufio.Reader) {
	return lineServerMax(t, 0)
}

// lineServerMax is lineServer with a line limit (0: the default).
func lineServerMax(t *testing.T, maxLine int) (in io.WriteCloser, out *bufio.Reader) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "line-test"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, struct{}{}, nil
	})
	return serveLines(t, srv, func(r io.ReadCloser, w io.WriteCloser) *Transport {
		return &Transport{Reader: r, Writer: w, MaxLine: maxLine}
	})
}

// serveLines serves srv on the Transport transport makes of two real
// pipes (the server's input and output), initialized; the test writes
// lines to in and reads lines from out. A transport with Direct is told
// its session.
func serveLines(t *testing.T, srv *mcp.Server, transport func(r io.ReadCloser, w io.WriteCloser) *Transport) (in io.WriteCloser, out *bufio.Reader) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	tr := transport(inR, outW)
	ss, err := srv.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Direct != nil {
		tr.SetSession(ss)
	}
	t.Cleanup(func() {
		inW.Close()
		ss.Wait()
		outR.Close()
	})
	out = bufio.NewReader(outR)
	send(t, inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if line := answerLine(t, out); !strings.Contains(line, `"serverInfo"`) {
		t.Fatalf("initialize answer %s", line)
	}
	send(t, inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return inW, out
}

func send(t *testing.T, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func answerLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		done <- line
	}()
	select {
	case line := <-done:
		if line == "" {
			t.Fatal("no answer: connection closed")
		}
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
		return ""
	}
}

func TestLineConnCallsAndBatches(t *testing.T) {
	in, out := lineServer(t)

	// One call per line; blank lines and CRLF endings are fine.
	send(t, in, "")
	send(t, in, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`+"\r")
	var one struct {
		ID     string `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	line := answerLine(t, out)
	if err := json.Unmarshal([]byte(line), &one); err != nil || one.ID != "a" || len(one.Result.Content) != 1 || one.Result.Content[0].Text != "hi" {
		t.Fatalf("call answer %s (%v)", line, err)
	}

	// A batch of two calls and a notification: one array with two answers.
	send(t, in, `[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}},{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]`)
	line = answerLine(t, out)
	var answers []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &answers); err != nil || len(answers) != 2 {
		t.Fatalf("batch answer %s (%v)", line, err)
	}
	ids := map[int]bool{answers[0].ID: true, answers[1].ID: true}
	if !ids[7] || !ids[8] {
		t.Errorf("batch answers ids %v, want 7 and 8", ids)
	}

	// Later calls still work after the batch.
	send(t, in, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if line := answerLine(t, out); !strings.Contains(line, `"id":9`) {
		t.Errorf("ping answer %s", line)
	}
}

func TestDecodeMessage(t *testing.T) {
	for _, bad := range []string{
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"`,
		`"ping"`,
	} {
		if msg, err := decodeMessage([]byte(bad)); err == nil {
			t.Errorf("%s: decoded as %#v, want an error", bad, msg)
		}
	}
	// An empty method is still a request; a message with an id and no
	// method is a response.
	if msg, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":""}`)); err != nil || msg == nil {
		t.Errorf("empty method: %v", err)
	}
	if msg, err := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`)); err != nil || msg == nil {
		t.Errorf("error response: %v", err)
	}
}

// Bad input is answered with a JSON-RPC error and the session goes on:
// what is not JSON gets -32700, what is JSON but no valid message -32600
// (with its id when it has one), as do an empty batch, nesting past the
// limit and a line past the length limit (read to its end and skipped).
func TestLineConnAnswersBadInput(t *testing.T) {
	const limit = 4096
	in, out := lineServerMax(t, limit)
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	tests := []struct {
		name, line string
		code       int
		id         string // the id the error carries, as JSON
		says       string
	}{
		{"not JSON", "hello there", -32700, "null", "unmarshaling"},
		{"cut JSON", `{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "null", "unmarshaling"},
		{"raw NUL", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"pi\x00ng\"}", -32700, "null", "invalid character"},
		{"NUL outside JSON", "\x00", -32700, "null", "invalid character"},
		{"empty batch", "[]", -32600, "null", "empty JSON-RPC batch"},
		{"wrong version", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5", "version"},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":5}`, -32600, `"m"`, "method"},
		{"id a bool", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "null", "id"},
		{"a bare string", `"ping"`, -32600, "null", "unmarshaling"},
		{"deep nesting", deep, -32600, "null", "nested more than the 64 levels allowed"},
		{"deep nesting in a string is fine to count as text", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"s":"` + deep + `"}}`, 0, "6", ""},
		{"line over the limit", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"s":"` + strings.Repeat("x", 3*limit) + `"}}`, -32600, "null", "longer than 4096 bytes"},
	}
	for i, tt := range tests {
		send(t, in, tt.line)
		var a struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		line := answerLine(t, out)
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("%s: answer %q is not JSON: %v", tt.name, line, err)
		}
		switch {
		case tt.code == 0 && a.Error != nil:
			t.Errorf("%s: error %s, want an answer", tt.name, line)
		case tt.code != 0 && (a.Error == nil || a.Error.Code != tt.code || !strings.Contains(a.Error.Message, tt.says)):
			t.Errorf("%s: answer %s, want code %d saying %q", tt.name, line, tt.code, tt.says)
		case string(a.ID) != tt.id:
			t.Errorf("%s: answer id %s, want %s", tt.name, a.ID, tt.id)
		}
		// The session goes on.
		send(t, in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		if line := answerLine(t, out); !strings.Contains(line, fmt.Sprintf(`"id":%d`, 100+i)) || strings.Contains(line, "error") {
			t.Fatalf("after %s: ping answered %s", tt.name, line)
		}
	}
	// A batch with bad members: they are answered inside the batch's answer.
	send(t, in, `[{"jsonrpc":"2.0","id":20,"method":"ping"},{"jsonrpc":"1.0","id":21,"method":"ping"},42]`)
	var answers []struct {
		ID    int `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	line := answerLine(t, out)
	if err := json.Unmarshal([]byte(line), &answers); err != nil || len(answers) != 3 {
		t.Fatalf("mixed batch answer %s (%v)", line, err)
	}
	errs := 0
	for _, a := range answers {
		if a.Error != nil {
			errs++
			if a.Error.Code != -32600 {
				t.Errorf("bad batch member answered %s", line)
			}
		}
	}
	if errs != 2 {
		t.Errorf("mixed batch: %d errors in %s, want 2", errs, line)
	}
	// A batch of bad members only is answered at once.
	send(t, in, `[1,2]`)
	if line := answerLine(t, out); !strings.HasPrefix(line, "[") || strings.Count(line, "-32600") != 2 {
		t.Errorf("all-bad batch answered %s", line)
	}
}

// The end of input ends the session only once every call read is
// answered: a client may write its calls and close its side at once.
func TestLineConnLastLineAndEOF(t *testing.T) {
	var out strings.Builder
	c := &lineConn{r: bufio.NewReader(strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)), maxLine: DefaultMaxLine, w: nopCloser{&out}}
	msg, err := c.Read(context.Background())
	if err != nil || msg == nil {
		t.Fatalf("last line without newline: %v", err)
	}
	eof := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); eof <- err }()
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v before the call was answered", err)
	case <-time.After(50 * time.Millisecond): // it must still be waiting (no event to wait on for "not yet")
	}
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Result: json.RawMessage("{}")}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		if err != io.EOF {
			t.Fatalf("after the last answer: %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no EOF after the last call was answered")
	}
	if !strings.Contains(out.String(), `"id":3`) {
		t.Errorf("answer not written: %q", out.String())
	}
}

// A call nested past the limit is answered with its own id, however deep
// (past the 10,000 levels a JSON decoder takes too), wherever its id is:
// a client waits for that id, and a null answers nothing it asked.
func TestDeepCallGetsItsID(t *testing.T) {
	in, out := lineServerMax(t, 1<<20)
	for _, c := range []struct{ name, line, id string }{
		{"9000 deep", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"status","arguments":{"id":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}}}`, "9"},
		{"12000 deep, id last", `{"jsonrpc":"2.0","method":"tools/call","params":` + strings.Repeat(`{"a":`, 12000) + "1" + strings.Repeat("}", 12000) + `,"id":"deep"}`, `"deep"`},
		{"deep and cut", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":` + strings.Repeat("[", 100), "null"},
	} {
		send(t, in, c.line)
		var a struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		line := answerLine(t, out)
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.Error == nil || a.Error.Code != -32600 || string(a.ID) != c.id || !strings.Contains(a.Error.Message, "nested more than the 64 levels allowed") {
			t.Errorf("%s: answer %s, want -32600 with id %s saying it is nested too deep", c.name, line, c.id)
		}
	}
}

// pipeServer serves the line test's MCP server over two real pipes on
// mcpline's Transport (line) or the go-sdk's own IOTransport, with no
// handshake done.
func pipeServer(t *testing.T, line bool) (in io.WriteCloser, out *bufio.Reader) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "line-test"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{}, struct{}{}, nil
	})
	var tr mcp.Transport = &Transport{Reader: inR, Writer: outW}
	if !line {
		tr = &mcp.IOTransport{Reader: inR, Writer: outW}
	}
	ss, err := srv.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		inW.Close()
		ss.Wait()
		outR.Close()
	})
	return inW, bufio.NewReader(outR)
}

// A call before initialize: the go-sdk refuses it with a plain error,
// code 0 on the wire (no JSON-RPC code); mcpline answers the same calls
// with the same message and -32600. Every other answer agrees, code
// included: pings before initialize, calls after it, and a session of
// the stateless protocol, which has no initialize.
func TestEarlyCallAgrees(t *testing.T) {
	const stateless = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}`
	for _, tc := range []struct {
		name  string
		lines []string
	}{
		{"initialize", []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"server/discover"}`,
			`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":7,"method":"nonesuch"}`,
		}},
		{"stateless", []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + stateless + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sdkIn, sdkOut := pipeServer(t, false)
			lineIn, lineOut := pipeServer(t, true)
			early := 0
			for _, l := range tc.lines {
				send(t, sdkIn, l)
				send(t, lineIn, l)
				if !strings.Contains(l, `"id"`) {
					continue
				}
				var sdk, ours struct {
					ID     any             `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  *jsonrpc.Error  `json:"error"`
				}
				a, b := answerLine(t, sdkOut), answerLine(t, lineOut)
				if err := json.Unmarshal([]byte(a), &sdk); err != nil {
					t.Fatalf("%s: the go-sdk's answer %s: %v", l, a, err)
				}
				if err := json.Unmarshal([]byte(b), &ours); err != nil {
					t.Fatalf("%s: mcpline's answer %s: %v", l, b, err)
				}
				if fmt.Sprint(sdk.ID) != fmt.Sprint(ours.ID) || (sdk.Error == nil) != (ours.Error == nil) {
					t.Fatalf("%s:\nthe go-sdk: %s\nmcpline:    %s", l, a, b)
				}
				if sdk.Error == nil {
					continue
				}
				if tc.name == "stateless" {
					t.Errorf("%s: %s (a stateless session needs no initialize)", l, a)
				}
				want := sdk.Error.Code
				if want == 0 {
					want = jsonrpc.CodeInvalidRequest
					early++
				}
				if ours.Error.Code != want || ours.Error.Message != sdk.Error.Message {
					t.Errorf("%s:\nthe go-sdk: %s\nmcpline:    %s (want code %d, the same message)", l, a, b, want)
				}
			}
			if tc.name == "initialize" && early != 2 {
				t.Errorf("%d calls refused with code 0 by the go-sdk before initialize, want 2 (tools/list, tools/call)", early)
			}
		})
	}
}
