package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one inbound JSON-RPC line (the go-sdk's default).
const maxLine = mcp.DefaultMaxLineLength

// lineTransport is MCP over newline-delimited JSON-RPC, as the stdio
// transport defines it, for the daemon's sessions on a bridge's pipes or
// the socket. It does what mcp.IOTransport does with a third of the work
// per message: IOTransport decodes every inbound message three times with
// a decoder that allocates 32 KiB each time, which showed up on every
// tool call; this one decodes it once with encoding/json and reads on the
// caller's goroutine (its reader is a socket or a pipe in non-blocking
// mode, so Close unblocks a Read).
//
// Batches (a JSON array of messages, allowed up to protocol 2025-03-26)
// are received: their messages are handed on one by one and the answers
// to their requests go back together as one array, as JSON-RPC says.
type lineTransport struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	return &lineConn{r: bufio.NewReaderSize(t.r, 64<<10), rc: t.r, w: t.w, batches: map[jsonrpc.ID]*batch{}}, nil
}

type lineConn struct {
	r  *bufio.Reader
	rc io.Closer
	w  io.WriteCloser

	readMu sync.Mutex // Read is called by one goroutine; this guards queue
	queue  []jsonrpc.Message

	writeMu sync.Mutex
	batches map[jsonrpc.ID]*batch // requests of batches still unanswered, guarded by writeMu

	closeOnce sync.Once
	closeErr  error
}

// batch collects the answers to the requests of one inbound batch.
type batch struct {
	open    int
	answers [][]byte
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	for len(c.queue) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '[' {
			msg, err := decodeMessage(line)
			if err != nil {
				return nil, err
			}
			return msg, nil
		}
		if c.queue, err = c.readBatch(line); err != nil {
			return nil, err
		}
	}
	msg := c.queue[0]
	c.queue = c.queue[1:]
	return msg, nil
}

// readLine reads up to a newline (or the end of input, for a last line
// without one), at most maxLine bytes.
func (c *lineConn) readLine() ([]byte, error) {
	var long []byte
	for {
		part, err := c.r.ReadSlice('\n')
		if err == nil && long == nil {
			return part, nil // the common case: no copy
		}
		if len(long)+len(part) > maxLine {
			return nil, fmt.Errorf("inbound JSON-RPC line longer than %d bytes", maxLine)
		}
		long = append(long, part...)
		switch {
		case err == nil:
			return long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(long)) > 0:
			return long, nil
		default:
			return nil, err
		}
	}
}

func (c *lineConn) readBatch(line []byte) ([]jsonrpc.Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty JSON-RPC batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &batch{}
	var ids []jsonrpc.ID
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
			ids = append(ids, r.ID)
		}
		msgs = append(msgs, msg)
	}
	if len(ids) > 0 {
		c.writeMu.Lock()
		for _, id := range ids {
			if _, dup := c.batches[id]; dup {
				c.writeMu.Unlock()
				return nil, fmt.Errorf("JSON-RPC batch repeats the id of an unanswered request: %v", id.Raw())
			}
		}
		for _, id := range ids {
			c.batches[id] = b
		}
		b.open = len(ids)
		c.writeMu.Unlock()
	}
	return msgs, nil
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

func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var w wireMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
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

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if r, ok := msg.(*jsonrpc.Response); ok {
		if b, ok := c.batches[r.ID]; ok {
			delete(c.batches, r.ID)
			b.answers = append(b.answers, data)
			if b.open--; b.open > 0 {
				return nil
			}
			data = append(append([]byte{'['}, bytes.Join(b.answers, []byte{','})...), ']')
		}
	}
	_, err = c.w.Write(append(data, '\n'))
	return err
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		err1 := c.rc.Close()
		err2 := c.w.Close()
		c.closeErr = errors.Join(err1, err2)
	})
	return c.closeErr
}
