package mcpline

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/jsonenc"
)

// libraryAnswer is a tools/call answer's line as the library encodes it
// (callDirect's way when encodeAnswer declines).
func libraryAnswer(id jsonrpc.ID, res *mcp.CallToolResult) ([]byte, error) {
	raw, err := marshalResult(res)
	if err != nil {
		return nil, err
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: raw})
}

func mustID(t testing.TB, v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// checkAnswerAgrees fails t if encodeAnswer takes res and encodes it
// otherwise than the library; it reports whether encodeAnswer took it.
func checkAnswerAgrees(t testing.TB, id jsonrpc.ID, res *mcp.CallToolResult) bool {
	t.Helper()
	want, werr := libraryAnswer(id, res)
	got, ok := encodeAnswer(id, res)
	if !ok {
		return false
	}
	if werr != nil {
		t.Fatalf("encodeAnswer took a result the library cannot encode (%v): %s", werr, got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodeAnswer:\n%s\nthe library:\n%s", got, want)
	}
	return true
}

// The short path's answers are the library's, byte for byte: HTML and
// control characters, invalid UTF-8, U+2028, spaces in the structured
// content, string ids with what JSON escapes, errors; and it declines
// every result it does not encode itself.
func TestEncodeAnswerAgrees(t *testing.T) {
	env := `{"exit_code":0,"stdout":"a <b> & \"c\"\n\t\u2028 é \u0000","semantic_status":"ok","pid":12}`
	for _, tc := range []struct {
		name string
		id   any
		res  *mcp.CallToolResult
		take bool
	}{
		{"the common answer", float64(7), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env}}, StructuredContent: json.RawMessage(env)}, true},
		{"text alone", float64(1), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain <&> \x01 \xff\xfe end"}}}, true},
		{"an error", "call-<1>&\"x\"", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cmd: must not be empty"}}, IsError: true}, true},
		{"empty text", float64(-3), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{}}}, true},
		{"marshaled structured content", float64(8), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env}}, StructuredContent: marshaled(t, map[string]any{"s": "a <b> & \u2028 \xff \x01", "n": []int{1, 2}})}, true},
		{"null marshaled structured content", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: jsonenc.Compact(nil)}, false},
		{"structured with spaces", float64(9), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: json.RawMessage(" { \"a\" : [ 1 , 2 ] , \"b\":\"<\u2029>\" } ")}, true},
		{"large id", float64(1 << 52), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}, true},
		{"invalid structured content", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: json.RawMessage(`{"a":`)}, false},
		{"null structured content", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: json.RawMessage(nil)}, false},
		{"structured content as a value", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, StructuredContent: map[string]int{"a": 1}}, false},
		{"meta", float64(2), &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}, false},
		{"two contents", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}, &mcp.TextContent{Text: "y"}}}, false},
		{"no content", float64(2), &mcp.CallToolResult{Content: []mcp.Content{}}, false},
		{"annotated text", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}}, false},
		{"an image", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}, false},
		{"request state", float64(2), &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, RequestState: "s"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if took := checkAnswerAgrees(t, mustID(t, tc.id), tc.res); took != tc.take {
				t.Errorf("encodeAnswer took it: %v, want %v", took, tc.take)
			}
		})
	}
}

// marshaled is v as the tools hand their structured content over:
// json.Marshal's bytes, marked compact (jsonenc.Compact), which
// encodeAnswer copies as they are.
func marshaled(t testing.TB, v any) jsonenc.Compact {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return jsonenc.Compact(raw)
}

// FuzzEncodeAnswer: whatever the text, the structured content and the
// id, an answer encodeAnswer takes is the library's; structured content
// that json.Marshal made (a fuzzed string in an object) is copied as it
// is, and still the library's bytes.
func FuzzEncodeAnswer(f *testing.F) {
	f.Add("ok", `{"exit_code":0}`, "", int64(1), false)
	f.Add("a <b> & \u2028 \xff", `{"s":"<>&\u2029"}`, "id\"<", int64(-5), true)
	f.Add("", ` [1, 2 ,{"a" :null}] `, "", int64(0), false)
	f.Fuzz(func(t *testing.T, text, structured, sid string, nid int64, isErr bool) {
		var id jsonrpc.ID
		if sid != "" {
			id = mustID(t, sid)
		} else {
			id = mustID(t, float64(nid%(1<<53)))
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}
		if structured != "" {
			res.StructuredContent = json.RawMessage(structured)
		}
		checkAnswerAgrees(t, id, res)
		res.StructuredContent = marshaled(t, map[string]any{"text": text, "s": structured, "n": nid})
		if !checkAnswerAgrees(t, id, res) {
			t.Fatal("encodeAnswer declined marshaled structured content")
		}
	})
}

// BenchmarkEncodeAnswer: a terminal_exec answer encoded by encodeAnswer
// and by the library, taking turns in each iteration: short-ns/op,
// library-ns/op and their ratio.
func BenchmarkEncodeAnswer(b *testing.B) {
	env := `{"exit_code":0,"stdout":"","stderr":"","stdout_truncated_bytes":0,"stderr_truncated_bytes":0,"runtime_ms":1,"timed_out":false,"pid":4242,"semantic_status":"ok","shell_kind":"direct","status":"done","limits_enforced_by":"cgroup"}`
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env}}, StructuredContent: json.RawMessage(env)}
	id := mustID(b, float64(12))
	var short, lib time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, ok := encodeAnswer(id, res); !ok {
			b.Fatal("declined")
		}
		t1 := time.Now()
		if _, err := libraryAnswer(id, res); err != nil {
			b.Fatal(err)
		}
		short, lib = short+t1.Sub(t0), lib+time.Since(t1)
	}
	b.ReportMetric(float64(short.Nanoseconds())/float64(b.N), "short-ns/op")
	b.ReportMetric(float64(lib.Nanoseconds())/float64(b.N), "library-ns/op")
	b.ReportMetric(float64(short)/float64(lib), "short/library")
}
