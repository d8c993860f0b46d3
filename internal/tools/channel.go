package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/service"
)

// Claude Code channels: a server that declares the experimental capability
// ChannelCapability may push notifications/claude/channel events into the
// session, which Claude Code started with
// --dangerously-load-development-channels server:NAME shows the model as a
// <channel source="NAME" k="v"...>content</channel> block. Claude Code
// declares the same capability as a client (experimental
// {"claude/channel": {}}); a session is sent channel events only if its
// client did (wantsChannel): to other clients the method is unknown, and
// some complain at every event (the Python SDK prints a validation
// warning). They get the standard notifications (logs, resources/updated).
const (
	ChannelCapability = "claude/channel"
	ChannelMethod     = "notifications/claude/channel"
)

// ChannelParams are the params of a channel notification. Meta keys are
// identifiers (letters, digits, _): Claude Code drops other keys.
type ChannelParams struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta,omitempty"`
}

// The go-sdk (v1.8) sends only the notification methods it knows. A
// channel event therefore leaves the server as a carrier: a progress
// notification with the token channelToken and the ChannelParams under
// _meta[channelToken]. hive's transports (the line transport of stdio and
// socket sessions, the HTTP front end's SSE writer) turn the carrier into
// the channel notification with UnwrapChannel before it is written. A
// transport that does not would pass a progress notification for a token
// no request gave, which clients ignore.
const channelToken = "hive/claude-channel"

// Coalescing: at most one channel notification per channelGap per server;
// what arrives in between goes out together, as one summary. An event
// waits channelSettle before it goes out, so that a burst starting is
// summarised from its first event, and a job end the agent read at once
// (status clearing its todo) is not pushed.
const (
	channelGap    = time.Second
	channelSettle = 150 * time.Millisecond
)

// UnwrapChannel turns a channel carrier into the notifications/claude/channel
// notification it carries and reports whether msg was one. Any other
// message is left alone.
func UnwrapChannel(msg jsonrpc.Message) (jsonrpc.Message, bool) {
	r, ok := msg.(*jsonrpc.Request)
	if !ok || r.IsCall() || r.Method != "notifications/progress" || !bytes.Contains(r.Params, []byte(channelToken)) {
		return msg, false
	}
	var w struct {
		Token any                        `json:"progressToken"`
		Meta  map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &w) != nil || w.Token != channelToken || w.Meta[channelToken] == nil {
		return msg, false
	}
	return &jsonrpc.Request{Method: ChannelMethod, Params: w.Meta[channelToken]}, true
}

// channelEvent is one thing to push: a new inbox message or a job's end.
type channelEvent struct {
	key    string // what removes it before it is sent: "message/ID", "todo/KEY"
	kind   string // "message" or "job"
	params ChannelParams
	exit   string // a job's exit code ("" if none)
	id     string
}

// channelEventOf is the event a change is worth, if any: a new message, or
// a job's todo updated to its end summary. A removal names the key of the
// pending event it cancels (ok false).
func channelEventOf(d *service.Service, c service.Change) (ev channelEvent, removes string, ok bool) {
	switch c.Kind {
	case service.ChangeMessage:
		key := "message/" + strconv.FormatInt(c.Message.ID, 10)
		if c.Removed {
			return ev, key, false
		}
		id := strconv.FormatInt(c.Message.ID, 10)
		return channelEvent{key: key, kind: "message", id: id, params: ChannelParams{
			Content: fmt.Sprintf("inbox message %s from %s: %s (read_inbox takes it)", id, c.Message.From, c.Message.Preview),
			Meta:    map[string]string{"kind": "message", "id": id, "from": c.Message.From},
		}}, "", true
	case service.ChangeTodo:
		if c.Todo.Subsystem != service.TodoSubsystem {
			return ev, "", false
		}
		key := "todo/" + c.Todo.Key
		if c.Removed {
			return ev, key, false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		in, summary, ok := d.JobEnd(ctx, c.Todo.Key)
		if !ok {
			return ev, "", false
		}
		meta := map[string]string{"kind": "job", "id": in.ID, "status": in.State}
		var exit string
		if in.ExitCode != nil {
			exit = strconv.Itoa(*in.ExitCode)
			meta["exit"] = exit
		}
		return channelEvent{key: key, kind: "job", id: in.ID, exit: exit, params: ChannelParams{
			Content: summary, Meta: meta,
		}}, "", true
	}
	return ev, "", false
}

// coalescer holds the channel events not sent yet. It is owned by one
// server's notification goroutine.
type coalescer struct {
	pending []channelEvent
	last    time.Time // when the last notification went out
	// seen holds the keys queued or sent, so that a job's end is pushed
	// once however often its todo is written; a key goes when its loose
	// end does.
	seen map[string]bool
}

// maxSeen bounds seen: past it, the oldest knowledge is forgotten at once
// (at worst a job's end is pushed a second time).
const maxSeen = 4096

// add queues an event unless its key was queued or sent before; queued
// reports whether it was. due is when the next notification is due.
func (co *coalescer) add(ev channelEvent, now time.Time) (due time.Time, queued bool) {
	if co.seen[ev.key] {
		return time.Time{}, false
	}
	if co.seen == nil || len(co.seen) >= maxSeen {
		co.seen = map[string]bool{}
	}
	co.seen[ev.key] = true
	co.pending = append(co.pending, ev)
	return co.due(now), true
}

// due is when what is pending may go out: settled, and a gap after the last.
func (co *coalescer) due(now time.Time) time.Time {
	at := now.Add(channelSettle)
	if next := co.last.Add(channelGap); next.After(at) {
		at = next
	}
	return at
}

// remove drops the pending event with key (the agent saw it otherwise)
// and forgets the key.
func (co *coalescer) remove(key string) {
	co.pending = slices.DeleteFunc(co.pending, func(ev channelEvent) bool { return ev.key == key })
	delete(co.seen, key)
}

// take returns the notification for what is pending (one event as it is,
// several as one summary) and empties the queue; ok is false if nothing
// is pending.
func (co *coalescer) take(now time.Time) (p ChannelParams, ok bool) {
	evs := co.pending
	co.pending = nil
	switch len(evs) {
	case 0:
		return p, false
	case 1:
		co.last = now
		return evs[0].params, true
	}
	co.last = now
	return summarize(evs), true
}

// summarize makes one notification of several events.
func summarize(evs []channelEvent) ChannelParams {
	var msgs, jobs []channelEvent
	for _, ev := range evs {
		if ev.kind == "message" {
			msgs = append(msgs, ev)
		} else {
			jobs = append(jobs, ev)
		}
	}
	var parts []string
	if len(msgs) > 0 {
		var from []string
		for _, m := range msgs {
			if f := m.params.Meta["from"]; !slices.Contains(from, f) && len(from) < 5 {
				from = append(from, f)
			}
		}
		parts = append(parts, fmt.Sprintf("%d inbox messages from %s (read_inbox takes them)", len(msgs), strings.Join(from, ", ")))
	}
	if len(jobs) > 0 {
		var ended []string
		for i, j := range jobs {
			if i == 5 {
				ended = append(ended, fmt.Sprintf("%d more", len(jobs)-5))
				break
			}
			s := j.id + " " + j.params.Meta["status"]
			if j.exit != "" {
				s += " exit " + j.exit
			}
			ended = append(ended, s)
		}
		parts = append(parts, fmt.Sprintf("%d jobs ended: %s", len(jobs), strings.Join(ended, ", ")))
	}
	return ChannelParams{
		Content: fmt.Sprintf("%d events: %s; get_loose_ends lists them.", len(evs), strings.Join(parts, "; ")),
		Meta:    map[string]string{"kind": "summary", "count": strconv.Itoa(len(evs))},
	}
}

// sendChannel sends the carrier of a channel notification to every session
// of srv whose client wants channel events.
func sendChannel(srv *mcp.Server, p ChannelParams) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ss := range srv.Sessions() {
		if wantsChannel(ss) {
			ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: channelToken, Meta: mcp.Meta{channelToken: p}})
		}
	}
}

// wantsChannel reports whether the session's client declared the
// experimental capability ChannelCapability (any value but null): in its
// initialize, or, on the stateless protocol (2026-07-28), in the
// capabilities in the _meta of the session's first request (the go-sdk
// keeps those as the session's; its client sends the same on every
// request).
func wantsChannel(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Experimental[ChannelCapability] != nil
}
