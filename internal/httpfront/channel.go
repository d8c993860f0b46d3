package httpfront

import (
	"bytes"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/hivetools/hive/internal/tools"
)

// channelWriter is the HTTP front end's half of the channel carrier (see
// tools.UnwrapChannel): it turns a carrier in an SSE event the go-sdk
// writes into the notifications/claude/channel event. The go-sdk writes
// each event with one Write ("event: message", an optional "id: …", one
// "data: JSON" line, a blank line), so an event is rewritten whole; every
// other write passes through untouched. Flush, FlushError and Unwrap come
// with the embedded writer, so SSE flushing works through it.
//
// It also gives the SDK's priming event (the first event of a POST's SSE
// stream: an id and empty data) a retry: field, the time a client waits
// before it reconnects to a dropped stream (SSERetry).
type channelWriter struct {
	*httpDeadlineWriter
}

// SSERetry is the retry: field of a stream's priming event: how long a
// client waits before it resumes a dropped stream with Last-Event-ID.
const SSERetry = time.Second

var (
	progressMethod = []byte(`"notifications/progress"`)
	primeEvent     = []byte("event: prime\n")
	dataField      = []byte("\ndata: ")
	retryField     = []byte("\nretry: " + strconv.FormatInt(SSERetry.Milliseconds(), 10))
)

func (w channelWriter) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, primeEvent) {
		if i := bytes.Index(p, dataField); i >= 0 {
			out := make([]byte, 0, len(p)+len(retryField))
			out = append(append(append(out, p[:i]...), retryField...), p[i:]...)
			if _, err := w.httpDeadlineWriter.Write(out); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	if !bytes.Contains(p, progressMethod) {
		return w.httpDeadlineWriter.Write(p)
	}
	out, ok := unwrapChannelEvent(p)
	if !ok {
		return w.httpDeadlineWriter.Write(p)
	}
	if _, err := w.httpDeadlineWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// unwrapChannelEvent rewrites the data line of one SSE event if it holds a
// channel carrier.
func unwrapChannelEvent(ev []byte) ([]byte, bool) {
	lines := bytes.Split(ev, []byte("\n"))
	for i, l := range lines {
		data, found := bytes.CutPrefix(l, []byte("data: "))
		if !found {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(data)
		if err != nil {
			return nil, false
		}
		msg, ok := tools.UnwrapChannel(msg)
		if !ok {
			return nil, false
		}
		enc, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return nil, false
		}
		lines[i] = append([]byte("data: "), enc...)
		return bytes.Join(lines, []byte("\n")), true
	}
	return nil, false
}
