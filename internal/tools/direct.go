package tools

import (
	"context"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/service"
)

// Direct answers a session's tools/call without the go-sdk's dispatch:
// what the server does for the call, in the same order, with the same
// result. The go-sdk decodes a call's params twice per call with a
// decoder that allocates 32 KiB each time, queues the call to a goroutine
// that starts another for the handler, and runs its middleware: a
// terminal_exec("true") costs the daemon about 6 % less CPU without it,
// its round trip 0.91-0.98x (BenchmarkDirectCall in internal/sockapi).
// mcpline.Transport takes the calls it may answer this way (see its
// Direct) and leaves every other message to the server: the go-sdk's own
// client (the stateless protocol) goes through the server.
//
// Call does what the server's tools/call does for a session of a
// protocol before 2026-07-28 whose call carries no field of the newer
// protocol: the envelope's log lines and activity, the tool's handler
// (its arguments checked and decoded as addTool does), Content never
// null, and the text-only form for a session that asked for it.
// TestDirectAgrees in internal/sockapi holds the two to the same answers.
type Direct struct {
	log  *slog.Logger
	act  *service.Activity
	sess *Session

	mu    sync.Mutex
	tools map[string]mcp.ToolHandler
}

// directs maps each server NewServer made, until its stop, to its Direct.
var directs sync.Map // *mcp.Server → *Direct

// DirectOf is the Direct of a server NewServer made (nil for another).
func DirectOf(srv *mcp.Server) *Direct {
	if v, ok := directs.Load(srv); ok {
		return v.(*Direct)
	}
	return nil
}

// add registers the handler of tool name, as the server has it.
func (d *Direct) add(name string, h mcp.ToolHandler) {
	d.mu.Lock()
	d.tools[name] = h
	d.mu.Unlock()
}

// Has reports whether tool name is one of the session's.
func (d *Direct) Has(name string) bool {
	d.mu.Lock()
	_, ok := d.tools[name]
	d.mu.Unlock()
	return ok
}

// Call answers a tools/call of the session ss with params p.
func (d *Direct) Call(ctx context.Context, ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	d.mu.Lock()
	h := d.tools[p.Name]
	d.mu.Unlock()
	c := beginCall(d.log, d.sess, ss, p.Name, p.Arguments)
	res, err := h(ctx, &mcp.CallToolRequest{Session: ss, Params: p})
	if err == nil && res != nil && res.Content == nil {
		// As the server's callTool: never "content": null.
		r := *res
		r.Content = []mcp.Content{}
		res = &r
	}
	if err != nil {
		res = nil
	}
	c.end(d.log, d.act, res, err)
	if res != nil && d.sess.textAnswers() {
		res.StructuredContent = nil // as textOnly
	}
	return res, err
}
