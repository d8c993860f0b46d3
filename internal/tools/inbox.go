package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/service"
)

// Resource URIs.
const (
	LooseEndsURI  = "hive://loose-ends"
	InboxURI      = "hive://inbox"
	TaskURIPrefix = "hive://tasks/"
)

// TodoOut is one todo as tools show it.
type TodoOut struct {
	ID        int64  `json:"id"`
	Subsystem string `json:"subsystem"`
	Key       string `json:"key"`
	Summary   string `json:"summary"`
	UpdatedAt int64  `json:"updated_at"`
}

// ReminderOut is one pending reminder as tools show it.
type ReminderOut struct {
	ID      int64  `json:"id"`
	DueAt   int64  `json:"due_at"`
	Preview string `json:"preview"`
}

// MessageOut is one message as get_loose_ends shows it.
type MessageOut struct {
	ID      int64  `json:"id"`
	From    string `json:"from"`
	At      int64  `json:"at"`
	Preview string `json:"preview"`
}

// InboxOut is the inbox part of get_loose_ends.
type InboxOut struct {
	Undelivered int          `json:"undelivered"`
	Oldest      []MessageOut `json:"oldest"`
}

// LooseEnds is the answer of get_loose_ends.
type LooseEnds struct {
	Reminders []ReminderOut `json:"reminders"`
	Todos     []TodoOut     `json:"todos"`
	Inbox     InboxOut      `json:"inbox"`
	// All that are open, listed or not: more than listed means another
	// page (todos_offset, reminders_offset).
	TodosTotal     int `json:"todos_total"`
	RemindersTotal int `json:"reminders_total"`
}

// looseEndsIn pages get_loose_ends: a burst of todos (a local program
// may raise thousands) never makes an answer of megabytes.
type looseEndsIn struct {
	Limit           *int `json:"limit,omitempty" jsonschema:"per list (50; max 500)"`
	TodosOffset     int  `json:"todos_offset,omitempty"`
	RemindersOffset int  `json:"reminders_offset,omitempty"`
}

// Loose ends listed by default, and at most, per kind.
const (
	looseEndsLimit    = 50
	maxLooseEndsLimit = 500
)

type cancelIn struct {
	Kind string `json:"kind" jsonschema:"reminder|todo|message"`
	ID   int64  `json:"id"`
}

type markIn struct {
	IDs []int64 `json:"ids" jsonschema:"from get_loose_ends"`
}

// Cleared is the answer of cancel_loose_end and mark_todos_done.
type Cleared struct {
	Cleared int `json:"cleared"`
}

type remindIn struct {
	Message         string   `json:"message"`
	DelaySeconds    *float64 `json:"delay_seconds,omitempty"`
	AtUnixTimestamp *float64 `json:"at_unix_timestamp,omitempty"`
}

// Reminded is the answer of remind.
type Reminded struct {
	ID        int64  `json:"id"`
	DueAt     int64  `json:"due_at"`
	SpillPath string `json:"spill_path,omitempty"`
}

type readInboxIn struct {
	Max *int `json:"max,omitempty" jsonschema:"default 10"`
}

// InboxMessage is one message read_inbox delivers.
type InboxMessage struct {
	ID   int64  `json:"id"`
	From string `json:"from"`
	At   int64  `json:"at"`
	Body string `json:"body"`
}

// InboxRead is the answer of read_inbox.
type InboxRead struct {
	Messages []InboxMessage `json:"messages"`
	Left     int            `json:"left"`
}

func (h *handlers) addInbox(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "get_loose_ends", Description: "Your loose ends: reminders, todos, unread messages."}, h.getLooseEnds)
	addTool(s, &mcp.Tool{Name: "cancel_loose_end", Description: "Cancel a reminder, clear a todo or drop a message unread."}, h.cancelLooseEnd)
	addTool(s, &mcp.Tool{Name: "remind", Description: "Message yourself after delay_seconds or at at_unix_timestamp (within a year)."}, h.remind)
	addTool(s, &mcp.Tool{Name: "read_inbox", Description: "Read (and remove) your oldest inbox messages."}, h.readInbox)
}

func (h *handlers) addAlways(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "mark_todos_done", Description: "Clear todos by id; unknown ids are skipped."}, h.markTodosDone)
	addTool(s, &mcp.Tool{Name: "set_status", Description: "Set your one-line status (max 200 chars); \"\" clears it."}, h.setStatus)
	addTool(s, &mcp.Tool{Name: "compact", Description: "Compact your context after this turn (granted above 66% use)."}, h.compact)
}

// looseEnds is the service's LooseEnds in get_loose_ends' words (unix
// seconds, as remind takes them).
func (h *handlers) looseEnds(ctx context.Context, in looseEndsIn) (LooseEnds, error) {
	limit := looseEndsLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	switch {
	case limit < 1 || limit > maxLooseEndsLimit:
		return LooseEnds{}, fmt.Errorf("limit %d: must be 1..%d", limit, maxLooseEndsLimit)
	case in.TodosOffset < 0:
		return LooseEnds{}, fmt.Errorf("todos_offset %d: must be >= 0", in.TodosOffset)
	case in.RemindersOffset < 0:
		return LooseEnds{}, fmt.Errorf("reminders_offset %d: must be >= 0", in.RemindersOffset)
	}
	le, err := h.d.LooseEndsPage(ctx, service.LooseEndsQuery{Limit: limit, TodosOffset: in.TodosOffset, RemindersOffset: in.RemindersOffset, MaxMessages: 5})
	if err != nil {
		return LooseEnds{}, err
	}
	out := LooseEnds{Reminders: []ReminderOut{}, Todos: []TodoOut{}, Inbox: InboxOut{Undelivered: le.Undelivered, Oldest: []MessageOut{}},
		TodosTotal: le.TodosTotal, RemindersTotal: le.RemindersTotal}
	for _, r := range le.Reminders {
		out.Reminders = append(out.Reminders, ReminderOut{ID: r.ID, DueAt: r.Due.Unix(), Preview: r.Preview})
	}
	for _, t := range le.Todos {
		out.Todos = append(out.Todos, TodoOut{ID: t.ID, Subsystem: t.Subsystem, Key: t.Key, Summary: t.Summary, UpdatedAt: t.Updated.Unix()})
	}
	for _, m := range le.Messages {
		out.Inbox.Oldest = append(out.Inbox.Oldest, MessageOut{ID: m.ID, From: m.From, At: m.At.Unix(), Preview: m.Preview})
	}
	return out, nil
}

func (h *handlers) getLooseEnds(ctx context.Context, _ *mcp.CallToolRequest, in looseEndsIn) (*mcp.CallToolResult, LooseEnds, error) {
	le, err := h.looseEnds(ctx, in)
	if err != nil {
		return nil, LooseEnds{}, err
	}
	if le.TodosTotal == 0 && le.RemindersTotal == 0 && le.Inbox.Undelivered == 0 {
		return text("no loose ends"), le, nil
	}
	var b strings.Builder
	for _, r := range le.Reminders {
		fmt.Fprintf(&b, "reminder %d due %s: %s\n", r.ID, time.Unix(r.DueAt, 0).Format(time.DateTime), r.Preview)
	}
	for _, t := range le.Todos {
		fmt.Fprintf(&b, "todo %d [%s] %s\n", t.ID, t.Subsystem, t.Summary)
	}
	if n := le.Inbox.Undelivered; n > 0 {
		fmt.Fprintf(&b, "inbox: %d undelivered (read_inbox reads them)\n", n)
		for _, m := range le.Inbox.Oldest {
			fmt.Fprintf(&b, "message %d from %s: %s\n", m.ID, m.From, m.Preview)
		}
	}
	for _, more := range []struct {
		what         string
		listed, from int
		total        int
	}{{"reminders", len(le.Reminders), in.RemindersOffset, le.RemindersTotal}, {"todos", len(le.Todos), in.TodosOffset, le.TodosTotal}} {
		if more.from+more.listed < more.total {
			fmt.Fprintf(&b, "%s %d-%d of %d listed: %s_offset %d lists the next\n", more.what, more.from+1, more.from+more.listed, more.total, strings.TrimSuffix(more.what, "s"), more.from+more.listed)
		}
	}
	brief := fmt.Sprintf("%d reminders, %d todos, %d undelivered messages in structuredContent", le.RemindersTotal, le.TodosTotal, le.Inbox.Undelivered)
	if len(le.Todos) < le.TodosTotal || len(le.Reminders) < le.RemindersTotal {
		brief += fmt.Sprintf(" (%d and %d listed)", len(le.Reminders), len(le.Todos))
	}
	return h.sess.reply(brief, func() string { return strings.TrimRight(b.String(), "\n") }), le, nil
}

func (h *handlers) cancelLooseEnd(ctx context.Context, _ *mcp.CallToolRequest, in cancelIn) (*mcp.CallToolResult, Cleared, error) {
	if err := h.d.CancelLooseEnd(ctx, in.Kind, in.ID); err != nil {
		return nil, Cleared{}, err
	}
	return text(fmt.Sprintf("cleared %s %d", in.Kind, in.ID)), Cleared{Cleared: 1}, nil
}

func (h *handlers) markTodosDone(ctx context.Context, _ *mcp.CallToolRequest, in markIn) (*mcp.CallToolResult, Cleared, error) {
	n, err := h.d.MarkTodosDone(ctx, in.IDs)
	if err != nil {
		return nil, Cleared{}, err
	}
	return text(fmt.Sprintf("cleared %d of %d", n, len(in.IDs))), Cleared{Cleared: n}, nil
}

func (h *handlers) remind(ctx context.Context, _ *mcp.CallToolRequest, in remindIn) (*mcp.CallToolResult, Reminded, error) {
	var due time.Time
	switch {
	case in.DelaySeconds != nil && in.AtUnixTimestamp != nil:
		return nil, Reminded{}, errors.New("delay_seconds and at_unix_timestamp: give one, not both")
	case in.DelaySeconds != nil:
		d := *in.DelaySeconds
		if !(d > 0) {
			return nil, Reminded{}, fmt.Errorf("delay_seconds %v: must be > 0", d)
		}
		if d > service.MaxRemindAhead.Seconds() {
			return nil, Reminded{}, fmt.Errorf("delay_seconds %v: at most %v (a year)", d, service.MaxRemindAhead.Seconds())
		}
		due = time.Now().Add(time.Duration(d * float64(time.Second)))
	case in.AtUnixTimestamp != nil:
		at := *in.AtUnixTimestamp
		now := float64(time.Now().UnixNano()) / 1e9
		if !(at > now) {
			return nil, Reminded{}, fmt.Errorf("at_unix_timestamp %v: is in the past (now is %.0f)", at, now)
		}
		if at-now > service.MaxRemindAhead.Seconds() {
			return nil, Reminded{}, fmt.Errorf("at_unix_timestamp %v: more than a year ahead", at)
		}
		due = time.Unix(0, int64(at*1e9))
	default:
		return nil, Reminded{}, errors.New("delay_seconds or at_unix_timestamp: give one")
	}
	if in.Message == "" {
		return nil, Reminded{}, errors.New("message: must not be empty")
	}
	r, err := h.d.Remind(ctx, in.Message, due)
	if err != nil {
		return nil, Reminded{}, err
	}
	out := Reminded{ID: r.ID, DueAt: r.Due.Unix(), SpillPath: r.SpillPath}
	return text(fmt.Sprintf("reminder %d due %s", r.ID, r.Due.Local().Format(time.DateTime))), out, nil
}

func (h *handlers) readInbox(ctx context.Context, _ *mcp.CallToolRequest, in readInboxIn) (*mcp.CallToolResult, InboxRead, error) {
	max := 10
	if in.Max != nil {
		max = *in.Max
	}
	if max < 1 || max > 100 {
		return nil, InboxRead{}, fmt.Errorf("max %d: must be 1..100", max)
	}
	ds, err := h.d.ReadInbox(ctx, max)
	if err != nil {
		return nil, InboxRead{}, err
	}
	out := InboxRead{Messages: []InboxMessage{}}
	if out.Left, err = h.d.Undelivered(ctx); err != nil {
		return nil, InboxRead{}, err
	}
	var b strings.Builder
	for _, d := range ds {
		out.Messages = append(out.Messages, InboxMessage{ID: d.ID, From: d.From, At: d.At.Unix(), Body: d.Body})
		fmt.Fprintf(&b, "--- message %d from %s at %s ---\n%s\n", d.ID, d.From, d.At.Local().Format(time.DateTime), d.Body)
	}
	if len(ds) == 0 {
		return text("inbox empty"), out, nil
	}
	brief := fmt.Sprintf("%d messages in structuredContent", len(ds))
	if out.Left > 0 {
		more := fmt.Sprintf("(%d more: read_inbox again)", out.Left)
		b.WriteString(more)
		brief += "\n" + more
	}
	return h.sess.reply(brief, func() string { return strings.TrimRight(b.String(), "\n") }), out, nil
}

type statusTextIn struct {
	Text string `json:"text"`
}

// StatusOut is the answer of set_status.
type StatusOut struct {
	Text  string `json:"text"`
	SetAt int64  `json:"set_at"`
}

func (h *handlers) setStatus(ctx context.Context, _ *mcp.CallToolRequest, in statusTextIn) (*mcp.CallToolResult, StatusOut, error) {
	st, err := h.d.SetStatus(ctx, in.Text)
	if err != nil {
		return nil, StatusOut{}, err
	}
	out := StatusOut{Text: st.StatusText, SetAt: st.StatusSetAt.Unix()}
	if in.Text == "" {
		return text("status cleared"), out, nil
	}
	return text("status set"), out, nil
}

// CompactOut is the answer of compact.
type CompactOut struct {
	CompactPending bool     `json:"compact_pending"`
	ContextUsage   *float64 `json:"context_usage"`
}

func (h *handlers) compact(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, CompactOut, error) {
	st, err := h.d.Compact(ctx)
	if err != nil {
		return nil, CompactOut{}, err
	}
	return text("compaction queued: it runs when this turn ends"), CompactOut{CompactPending: st.CompactPending, ContextUsage: st.ContextUsage}, nil
}

func (h *handlers) addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: InboxURI, Name: "inbox", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			le, err := h.looseEnds(ctx, looseEndsIn{})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(le.Inbox)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: InboxURI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: LooseEndsURI, Name: "loose-ends", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			le, err := h.looseEnds(ctx, looseEndsIn{})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(le)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: LooseEndsURI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TaskURIPrefix + "{id}", Name: "task", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, TaskURIPrefix)
			info, err := h.d.Job(ctx, id)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			b, _ := json.Marshal(h.taskStatus(info))
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}
