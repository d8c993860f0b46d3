package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineServer serves a small MCP server on a lineTransport over two real
// pipes; the test writes lines to in and reads lines from out.
func lineServer(t *testing.T) (in io.WriteCloser, out *bufio.Reader) {
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
	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, struct{}{}, nil
	})
	ss, err := srv.Connect(context.Background(), &lineTransport{r: inR, w: outW}, nil)
	if err != nil {
		t.Fatal(err)
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

func TestLineConnRejectsOverlongLine(t *testing.T) {
	c := &lineConn{r: bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", maxLine+10)+"\n"), 64<<10)}
	if _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("overlong line: %v", err)
	}
	c = &lineConn{r: bufio.NewReader(strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))}
	if msg, err := c.Read(context.Background()); err != nil || msg == nil {
		t.Fatalf("last line without newline: %v", err)
	}
	if _, err := c.Read(context.Background()); err != io.EOF {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
}
