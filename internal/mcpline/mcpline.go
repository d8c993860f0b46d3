// Package mcpline is MCP over newline-delimited JSON-RPC, as the stdio
// transport defines it: the transport of the daemon's MCP sessions on a
// bridge's pipes or on the daemon's socket (internal/sockapi hands it the
// connection). It replaces the go-sdk's mcp.IOTransport for speed and
// agrees with it on every message (FuzzDecodeMessageAgrees).
package mcpline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/lineio"
	"github.com/hivetools/hive/internal/tools"
)

// DefaultMaxLine bounds one inbound JSON-RPC line unless Transport.MaxLine
// says otherwise (the go-sdk's default, 16 MiB).
const DefaultMaxLine = mcp.DefaultMaxLineLength

// maxDepth bounds the nesting of arrays and objects in one inbound line.
// No MCP message needs more than a few levels; a deeper one is refused
// before anything decodes it.
const maxDepth = 64

// Transport is MCP over newline-delimited JSON-RPC, as the stdio
// transport defines it, for the daemon's sessions on a bridge's pipes or
// the socket. It does what mcp.IOTransport does with a third of the work
// per message: IOTransport decodes every inbound message three times with
// a decoder that allocates 32 KiB each time, which showed up on every
// tool call; this one decodes it once with encoding/json and reads on the
// caller's goroutine (its reader is a socket or a pipe in non-blocking
// mode, so Close unblocks a Read).
//
// Bad input never ends the session: a line that is not JSON gets a
// JSON-RPC parse error (-32700), one that is not a valid message (or is
// nested deeper than 64 levels, or is longer than the line limit) an
// invalid-request error (-32600), and the session reads on.
//
// A call before the session began (initialize, or a call of the
// stateless protocol) other than ping is refused by the go-sdk with no
// JSON-RPC code (0 on the wire); its answer goes out with -32600 instead
// (TestEarlyCallAgrees).
//
// Batches (a JSON array of messages, allowed up to protocol 2025-03-26)
// are received: their messages are handed on one by one and the answers
// to their requests go back together as one array, as JSON-RPC says.
//
// A Transport is connected once. The connection's Close closes Reader
// and Writer.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxLine bounds one inbound line; zero means DefaultMaxLine.
	MaxLine int
	// Direct, if set, answers the session's tools/call itself (see
	// Direct) once SetSession named the session.
	Direct Direct
	// session is the server's session on this transport (SetSession).
	session atomic.Pointer[mcp.ServerSession]
	// direct counts the calls handed to Direct.
	direct atomic.Int64
	// conn, once Connect ran, is the connection (for its end reason).
	conn *lineConn
}

// Direct answers a tools/call without the go-sdk's dispatch, as the
// session's server would (tools.Direct): Has says whether a tool is the
// session's, Call runs it.
type Direct interface {
	Has(name string) bool
	Call(ctx context.Context, ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)
}

// SetSession names the server's session on this transport (what
// Server.Connect returned): with Direct set, the calls read from then on
// that Direct may answer go to it.
func (t *Transport) SetSession(ss *mcp.ServerSession) { t.session.Store(ss) }

// WaitDirect returns once every call handed to Direct has been answered
// (or its answer could not be written): as the go-sdk's session, whose
// end waits for the calls under way.
func (t *Transport) WaitDirect() {
	if t.conn != nil {
		t.conn.directWG.Wait()
	}
}

// DirectCalls is how many calls Direct has been handed.
func (t *Transport) DirectCalls() int64 { return t.direct.Load() }

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	t.conn = &lineConn{direct: t.Direct, session: &t.session, directs: &t.direct, r: bufio.NewReaderSize(t.Reader, 64<<10), rc: t.Reader, w: t.Writer, maxLine: max, batches: map[jsonrpc.ID]*batch{}, open: map[jsonrpc.ID]bool{}}
	return t.conn, nil
}

// EndReason says why the session's connection ended: nil when the client
// closed its side (end of input), else the read or write error. Call it
// once the session has ended.
func (t *Transport) EndReason() error {
	if t.conn == nil {
		return nil
	}
	t.conn.errMu.Lock()
	defer t.conn.errMu.Unlock()
	return t.conn.endErr
}

type lineConn struct {
	direct   Direct
	session  *atomic.Pointer[mcp.ServerSession]
	directWG sync.WaitGroup // the calls Direct answers
	directs  *atomic.Int64  // Transport.direct
	r        *bufio.Reader
	rc       io.Closer
	w        io.WriteCloser
	maxLine  int

	readMu sync.Mutex // Read is called by one goroutine; this guards queue
	queue  []jsonrpc.Message

	writeMu sync.Mutex
	batches map[jsonrpc.ID]*batch // requests of batches still unanswered, guarded by writeMu
	// open holds the calls handed to the server and not answered yet;
	// drained, if set, is closed once it is empty (or writes fail).
	// Guarded by writeMu.
	open    map[jsonrpc.ID]bool
	drained chan struct{}
	// cancels ends the context of a call Direct answers (a cancellation
	// from the client, a failed write). Guarded by writeMu.
	cancels     map[jsonrpc.ID]context.CancelFunc
	closing     bool // Close began: Direct takes no more calls
	writeFailed bool
	// begun is set once the session began (an initialize, or a call of
	// the stateless protocol: see begins); early holds the calls read
	// before that, whose error answers get a JSON-RPC code (see Write).
	// Guarded by writeMu.
	begun bool
	early map[jsonrpc.ID]bool

	errMu  sync.Mutex
	endErr error // the first read error other than EOF, or write error

	closeOnce sync.Once
	closeErr  error
}

// batch collects the answers to the requests of one inbound batch.
type batch struct {
	open    int
	answers [][]byte
}

func (c *lineConn) SessionID() string { return "" }

// ended records why the connection ended (the first reason wins).
func (c *lineConn) ended(err error) {
	c.errMu.Lock()
	if c.endErr == nil {
		c.endErr = err
	}
	c.errMu.Unlock()
}

// errLineTooLong is a line past the limit; the rest of it was skipped.
type errLineTooLong struct{ limit int }

func (e errLineTooLong) Error() string {
	return fmt.Sprintf("request line longer than %d bytes (the daemon's --max-line-bytes limit): skipped", e.limit)
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for len(c.queue) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := c.readLine()
		var tooLong errLineTooLong
		if errors.As(err, &tooLong) {
			c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, err.Error())
			continue
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.ended(err)
				return nil, err
			}
			// The client closed its input: its requests still get their
			// answers (a client may write its calls and close at once).
			c.drain(ctx)
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if depth(line) > maxDepth {
			// Answered with the call's id (badID reads the top level
			// only): a client waits for that, not for a null.
			c.reject(badID(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf("JSON nested more than the %d levels allowed", maxDepth))
			continue
		}
		if line[0] != '[' {
			if dc, ok := readCall(line); ok {
				c.track(dc.req)
				if c.goDirect(dc.req, &dc) {
					continue
				}
				return dc.req, nil
			}
			msg, err := decodeMessage(line)
			if err != nil {
				c.rejectBad(line, err)
				continue
			}
			c.track(msg)
			if c.goDirect(msg, nil) {
				continue
			}
			return msg, nil
		}
		c.queue = c.readBatch(line)
	}
	msg := c.queue[0]
	c.queue = c.queue[1:]
	c.track(msg)
	return msg, nil
}

// track counts a call handed to the server as unanswered until its answer
// is written; a cancellation from the client settles it too (the server
// may not answer a cancelled call).
func (c *lineConn) track(msg jsonrpc.Message) {
	r, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	switch {
	case r.IsCall():
		if c.open == nil {
			c.open = map[jsonrpc.ID]bool{}
		}
		c.open[r.ID] = true
		if !c.begun {
			if begins(r) {
				c.begun = true
			} else {
				if c.early == nil {
					c.early = map[jsonrpc.ID]bool{}
				}
				c.early[r.ID] = true
			}
		}
	case r.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.settleLocked(id)
				if cancel, ok := c.cancels[id]; ok {
					cancel()
				}
			}
		}
	}
}

// begins reports whether a call begins the session as the go-sdk's
// server sees it: initialize, or any call of the stateless protocol
// (2026-07-28: its _meta names the protocol version). Until one comes,
// the server refuses other calls but ping.
func begins(r *jsonrpc.Request) bool {
	if r.Method == "initialize" {
		return true
	}
	if !bytes.Contains(r.Params, []byte(mcp.MetaKeyProtocolVersion)) {
		return false
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &p) != nil {
		return false
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= statelessProtocol
}

// statelessProtocol is the first protocol version without initialize.
const statelessProtocol = "2026-07-28"

// earlyError gives an error answer to a call read before the session
// began a JSON-RPC code: the go-sdk refuses such a call with a plain
// error, which goes out as code 0, no code JSON-RPC defines. It becomes
// -32600 (invalid request: the request is not valid in this state), with
// the go-sdk's message. An answer that has a code keeps it.
func earlyError(r *jsonrpc.Response) *jsonrpc.Response {
	if r.Error == nil {
		return r
	}
	if _, ok := errors.AsType[*jsonrpc.Error](r.Error); ok {
		return r
	}
	c := *r
	c.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: r.Error.Error()}
	return &c
}

func (c *lineConn) settleLocked(id jsonrpc.ID) {
	delete(c.early, id)
	if c.open[id] {
		delete(c.open, id)
		if len(c.open) == 0 && c.drained != nil {
			close(c.drained)
			c.drained = nil
		}
	}
}

// drain waits until every call read so far is answered, the connection
// fails, or ctx ends.
func (c *lineConn) drain(ctx context.Context) {
	c.writeMu.Lock()
	if len(c.open) == 0 || c.writeFailed {
		c.writeMu.Unlock()
		return
	}
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	ch := c.drained
	c.writeMu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// rejectBad answers a line that is not a valid message: a parse error
// if it is not JSON, else an invalid-request error with its id if it has
// a usable one.
func (c *lineConn) rejectBad(raw []byte, err error) {
	c.reject(badID(raw), badCode(raw), err.Error())
}

// badCode is the JSON-RPC code for a bad message: -32700 when it is not
// JSON at all, else -32600.
func badCode(raw []byte) int64 {
	if !json.Valid(raw) {
		return jsonrpc.CodeParseError
	}
	return jsonrpc.CodeInvalidRequest
}

// badID is the id of a bad message if it is JSON with a valid id at its
// top level, else the null id (JSON-RPC: a message whose id cannot be
// told is answered with null). It reads the message a token at a time
// and skips the members' values without decoding them: it needs no stack
// for their nesting, however deep (a decoder stops at 10,000).
func badID(raw []byte) jsonrpc.ID {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}
	}
	var id any
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return jsonrpc.ID{}
		}
		if k != "id" {
			if skipValue(dec) != nil {
				return jsonrpc.ID{}
			}
			continue
		}
		switch t, _ := dec.Token(); x := t.(type) {
		case string:
			id = x
		case json.Number:
			f, err := x.Float64()
			if err != nil || f != float64(int64(f)) {
				return jsonrpc.ID{}
			}
			id = f
		default:
			return jsonrpc.ID{}
		}
	}
	// The whole text is JSON: the object ends, nothing follows.
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return jsonrpc.ID{}
	}
	if _, err := dec.Token(); err != io.EOF {
		return jsonrpc.ID{}
	}
	v, err := jsonrpc.MakeID(id)
	if err != nil {
		return jsonrpc.ID{}
	}
	return v
}

// skipValue reads one value of dec's, tokens only.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// errorAnswer encodes a JSON-RPC error response. An invalid (zero) id is
// written as null, as JSON-RPC 2.0 wants for errors that have no id to
// answer.
func errorAnswer(id jsonrpc.ID, code int64, msg string) []byte {
	var w struct {
		Version string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}
	w.Version, w.Error = "2.0", &jsonrpc.Error{Code: code, Message: msg}
	if id.IsValid() {
		w.ID = id.Raw()
	}
	data, err := json.Marshal(w)
	if err != nil { // cannot happen for these fields; answer something valid anyway
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return data
}

// reject writes an error answer for a message that never reaches the
// server. A write error ends nothing here: the next Read or Write sees it.
func (c *lineConn) reject(id jsonrpc.ID, code int64, msg string) {
	c.writeLine(errorAnswer(id, code, msg))
}

func (c *lineConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	if err != nil {
		c.ended(fmt.Errorf("write to the client: %w", err))
		c.failWritesLocked()
	}
	return err
}

// depth is how deeply arrays and objects nest in a JSON text (outside
// strings); it stops counting past maxDepth+1.
func depth(b []byte) int {
	d, most, inStr, esc := 0, 0, false, false
	for _, ch := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				inStr = false
			}
		case ch == '"':
			inStr = true
		case ch == '[' || ch == '{':
			d++
			if d > most {
				most = d
				if most > maxDepth {
					return most
				}
			}
		case ch == ']' || ch == '}':
			d--
		}
	}
	return most
}

// readLine reads up to a newline (or the end of input, for a last line
// without one). A line over the limit is read to its end and dropped:
// errLineTooLong, and the next call reads the next line.
func (c *lineConn) readLine() ([]byte, error) {
	line, err := lineio.ReadSkip(c.r, c.maxLine)
	switch {
	case err == nil:
		return line, nil // may point into c.r's buffer: the common case, no copy
	case errors.Is(err, io.EOF):
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil // a last line without a newline
		}
		return nil, err
	}
	if _, ok := errors.AsType[*lineio.TooLongError](err); ok {
		return nil, errLineTooLong{c.maxLine}
	}
	return nil, err
}

// readBatch splits a batch into its messages. Members that are not valid
// messages are answered with errors within the batch's answer; a batch
// that is not a JSON array, or is empty, gets one error answer.
func (c *lineConn) readBatch(line []byte) []jsonrpc.Message {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		c.rejectBad(line, fmt.Errorf("unmarshaling jsonrpc batch: %w", err))
		return nil
	}
	if len(raws) == 0 {
		c.reject(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "empty JSON-RPC batch")
		return nil
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &batch{}
	seen := map[jsonrpc.ID]bool{}
	var ids []jsonrpc.ID
	c.writeMu.Lock()
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		if err != nil {
			b.answers = append(b.answers, errorAnswer(badID(raw), badCode(raw), err.Error()))
			continue
		}
		if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
			if _, dup := c.batches[r.ID]; dup || seen[r.ID] {
				b.answers = append(b.answers, errorAnswer(r.ID, jsonrpc.CodeInvalidRequest,
					fmt.Sprintf("JSON-RPC batch repeats the id of an unanswered request: %v", r.ID.Raw())))
				continue
			}
			seen[r.ID] = true
			ids = append(ids, r.ID)
		}
		msgs = append(msgs, msg)
	}
	for _, id := range ids {
		c.batches[id] = b
	}
	b.open = len(ids)
	var now []byte
	if b.open == 0 && len(b.answers) > 0 { // nothing left to wait for
		now = append(append([]byte{'['}, bytes.Join(b.answers, []byte{','})...), ']')
	}
	c.writeMu.Unlock()
	if now != nil {
		c.writeLine(now)
	}
	return msgs
}

// wireMessage is every field a JSON-RPC 2.0 message may have. Method is
// raw so that a present but empty method is told from an absent one.
type wireMessage struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// wireKeys are wireMessage's keys. JSON-RPC keys are case-sensitive,
// encoding/json's matching is not: see decodeMessage.
var wireKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}

func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if foldedKey(data) {
		// A key like "Method" or "jsonrpC": encoding/json took it for one
		// of ours. Decode again taking exact keys only, as the go-sdk does.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		w = wireMessage{}
		for _, k := range wireKeys {
			v, ok := m[k]
			if !ok {
				continue
			}
			var dst any
			switch k {
			case "jsonrpc":
				dst = &w.Version
			case "id":
				dst = &w.ID
			case "method":
				w.Method = v
			case "params":
				w.Params = v
			case "result":
				w.Result = v
			case "error":
				dst = &w.Error
			}
			if dst != nil {
				if err := json.Unmarshal(v, dst); err != nil {
					return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
				}
			}
		}
	}
	if w.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected \"2.0\"", w.Version)
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if w.Method != nil {
		var method string
		if err := json.Unmarshal(w.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("invalid JSON-RPC message: neither a request nor a response")
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// foldedKey reports whether the top-level object in data has a key that
// equals one of wireKeys only when case is ignored (or holds an escape,
// which could spell one). It is a byte scan: messages almost never have
// one, and then the one decode is all.
func foldedKey(data []byte) bool {
	d, inStr, esc := 0, false, false
	start, hasEsc := -1, false
	expectKey := false
	for i, ch := range data {
		if inStr {
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc, hasEsc = true, true
			case ch == '"':
				inStr = false
				if start >= 0 {
					key := data[start:i]
					if hasEsc {
						return true // rare: let the exact decode judge it
					}
					for _, k := range wireKeys {
						if len(key) == len(k) && string(key) != k && strings.EqualFold(string(key), k) {
							return true
						}
					}
					start = -1
				}
			}
			continue
		}
		switch ch {
		case '"':
			inStr = true
			if d == 1 && expectKey {
				start, hasEsc = i+1, false
				expectKey = false
			}
		case '{':
			d++
			if d == 1 {
				expectKey = true
			}
		case '[':
			d++
		case '}', ']':
			d--
		case ',':
			if d == 1 {
				expectKey = true
			}
		}
	}
	return false
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A channel event leaves the server as a carrier the go-sdk can send;
	// on the wire it is the notification Claude Code reads.
	msg, _ = tools.UnwrapChannel(msg)
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
		c.writeMu.Lock()
		early := c.early[r.ID]
		c.writeMu.Unlock()
		if early {
			msg = earlyError(r)
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeEncoded(msg, data)
}

// writeEncoded writes msg, encoded as data (a response to a call of a
// batch waits for the batch's other answers).
func (c *lineConn) writeEncoded(msg jsonrpc.Message, data []byte) (err error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if r, ok := msg.(*jsonrpc.Response); ok {
		defer c.settleLocked(r.ID)
		if b, ok := c.batches[r.ID]; ok {
			delete(c.batches, r.ID)
			b.answers = append(b.answers, data)
			if b.open--; b.open > 0 {
				return nil
			}
			data = append(append([]byte{'['}, bytes.Join(b.answers, []byte{','})...), ']')
		}
	}
	if _, err = c.w.Write(append(data, '\n')); err != nil {
		c.ended(fmt.Errorf("write to the client: %w", err))
		c.failWritesLocked()
	}
	return err
}

// failWritesLocked: the client cannot be written to; nothing is waited
// for any more.
func (c *lineConn) failWritesLocked() {
	c.writeFailed = true
	for _, cancel := range c.cancels {
		cancel() // as the go-sdk does to the calls under way
	}
	if c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
}

func (c *lineConn) Close() error {
	// As the go-sdk's connection, which closes once the calls under way
	// are answered: those Direct answers too (and takes no more).
	c.writeMu.Lock()
	c.closing = true
	c.writeMu.Unlock()
	c.directWG.Wait()
	c.writeMu.Lock()
	c.failWritesLocked() // a Read waiting for answers at the end of input goes
	c.writeMu.Unlock()
	c.closeOnce.Do(func() {
		err1 := c.rc.Close()
		err2 := c.w.Close()
		c.closeErr = errors.Join(err1, err2)
	})
	return c.closeErr
}

// goDirect hands msg to Direct if it is a tools/call Direct answers as
// the server would, and reports whether it did. That is a call of a
// session that began with initialize, of a protocol before 2026-07-28,
// whose params hold name (a tool of the session), arguments and _meta
// alone (exact keys, as the go-sdk reads them) and whose _meta names
// nothing of the newer protocol (no io.modelcontextprotocol/ key).
// Anything else goes to the server. fast, if not nil, is msg's params
// as readCall read them (a name and arguments alone).
func (c *lineConn) goDirect(msg jsonrpc.Message, fast *directCall) bool {
	r, ok := msg.(*jsonrpc.Request)
	if !ok || c.direct == nil || r.Method != "tools/call" || !r.IsCall() {
		return false
	}
	ss := c.session.Load()
	if ss == nil {
		return false
	}
	if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion >= statelessProtocol {
		return false
	}
	if fast != nil {
		p := &mcp.CallToolParamsRaw{Name: fast.name, Arguments: fast.args}
		return c.direct.Has(p.Name) && c.startDirect(r, ss, p)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Params, &m) != nil {
		return false
	}
	for k := range m {
		if k != "name" && k != "arguments" && k != "_meta" {
			return false
		}
	}
	p := &mcp.CallToolParamsRaw{Arguments: m["arguments"]}
	if raw, ok := m["name"]; !ok || json.Unmarshal(raw, &p.Name) != nil || !c.direct.Has(p.Name) {
		return false
	}
	if raw, ok := m["_meta"]; ok {
		var meta map[string]any
		if json.Unmarshal(raw, &meta) != nil {
			return false
		}
		for k := range meta {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				return false
			}
		}
		p.Meta = meta
	}
	return c.startDirect(r, ss, p)
}

// startDirect hands call r (params p) of session ss to Direct, on a
// goroutine of its own, and reports whether it did.
func (c *lineConn) startDirect(r *jsonrpc.Request, ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) bool {
	c.writeMu.Lock()
	if c.closing {
		c.writeMu.Unlock()
		return false // the server refuses it: its connection closes
	}
	ctx, cancel := context.WithCancel(context.Background())
	if c.cancels == nil {
		c.cancels = map[jsonrpc.ID]context.CancelFunc{}
	}
	c.cancels[r.ID] = cancel
	if c.writeFailed {
		cancel()
	}
	c.directWG.Add(1) // under writeMu: never after Close began to wait
	c.writeMu.Unlock()
	c.directs.Add(1)
	go func() {
		growStack()
		c.callDirect(ctx, cancel, r.ID, ss, p)
	}()
	// The call first: this reader would otherwise read on (most often to
	// find nothing, and wait) before the call's goroutine gets the
	// processor (the daemon runs with few: proc.TuneProcs).
	runtime.Gosched()
	return true
}

// callDirect runs a call Direct answers and writes its answer, as the
// go-sdk's connection would: the result marshaled without HTML escaping,
// or the error.
func (c *lineConn) callDirect(ctx context.Context, cancel context.CancelFunc, id jsonrpc.ID, ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) {
	defer c.directWG.Done()
	defer cancel() // its context ends with the answer, as a go-sdk call's
	res, err := c.direct.Call(ctx, ss, p)
	resp := &jsonrpc.Response{ID: id}
	if err == nil {
		if line, ok := encodeAnswer(id, res); ok {
			c.writeMu.Lock()
			delete(c.cancels, id)
			c.writeMu.Unlock()
			c.writeEncoded(resp, line) // as Write would, whatever became of ctx
			yieldToReader()
			return
		}
	}
	if err == nil && res == nil {
		err = errors.New("tools/call: no result")
	}
	if err == nil {
		resp.Result, err = marshalResult(res)
	}
	if err != nil {
		resp.Result, resp.Error = nil, err
	}
	c.writeMu.Lock()
	delete(c.cancels, id)
	c.writeMu.Unlock()
	c.Write(context.WithoutCancel(ctx), resp)
}

// marshalResult marshals a result as the go-sdk's connection does:
// encoding/json without HTML escaping, no trailing newline.
func marshalResult(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// callStack is about the stack a direct call of terminal_exec reaches
// (handler, job manager, the fork's preparation).
const callStack = 8 << 10

// growStack grows a fresh goroutine's stack to hold callStack at once,
// while the goroutine has one frame to move: grown on the way, by
// doublings deep in the call, the stack was copied three times, each
// copy walking every frame's tables, between the request and the fork
// (a direct call's goroutine starts with the runtime's smallest stack).
// BenchmarkGrowStack shows the two ways.
//
//go:noinline
func growStack() {
	var pad [callStack]byte
	touchStack(pad[:])
}

// touchStack writes to b, so that growStack's frame is not optimized
// away; b does not escape (it stays on the stack).
//
//go:noinline
func touchStack(b []byte) { b[len(b)-1] = 1 }
