package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/paths"
)

// Resource URIs.
const (
	LooseEndsURI  = "hive://loose-ends"
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

// LooseEnds is the answer of get_loose_ends.
type LooseEnds struct {
	Todos []TodoOut `json:"todos"`
}

type cancelIn struct {
	Kind string `json:"kind" jsonschema:"todo"`
	ID   int64  `json:"id" jsonschema:"id from get_loose_ends"`
}

type markIn struct {
	IDs []int64 `json:"ids" jsonschema:"todo ids from get_loose_ends"`
}

// Cleared is the answer of cancel_loose_end and mark_todos_done.
type Cleared struct {
	Cleared int `json:"cleared"`
}

func (h *handlers) addInbox(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "get_loose_ends", Description: "Your open loose ends: todos from tasks and local programs."}, h.getLooseEnds)
	addTool(s, &mcp.Tool{Name: "cancel_loose_end", Description: "Clear one loose end (kind \"todo\")."}, h.cancelLooseEnd)
}

func (h *handlers) addAlways(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "mark_todos_done", Description: "Clear several todos by id; unknown ids are skipped."}, h.markTodosDone)
	addTool(s, &mcp.Tool{Name: "set_status", Description: "Set your one-line status (max 200 chars); \"\" clears it."}, h.setStatus)
}

func (h *handlers) looseEnds(ctx context.Context) (LooseEnds, error) {
	todos, err := h.d.Inbox.Todos(ctx)
	if err != nil {
		return LooseEnds{}, err
	}
	out := LooseEnds{Todos: []TodoOut{}}
	for _, t := range todos {
		out.Todos = append(out.Todos, TodoOut{ID: t.ID, Subsystem: t.Subsystem, Key: t.Key, Summary: t.Summary, UpdatedAt: t.Updated.Unix()})
	}
	return out, nil
}

func (h *handlers) getLooseEnds(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, LooseEnds, error) {
	le, err := h.looseEnds(ctx)
	if err != nil {
		return nil, LooseEnds{}, err
	}
	if len(le.Todos) == 0 {
		return text("no loose ends"), le, nil
	}
	var b strings.Builder
	for _, t := range le.Todos {
		fmt.Fprintf(&b, "todo %d [%s] %s\n", t.ID, t.Subsystem, t.Summary)
	}
	return text(strings.TrimRight(b.String(), "\n")), le, nil
}

func (h *handlers) cancelLooseEnd(ctx context.Context, _ *mcp.CallToolRequest, in cancelIn) (*mcp.CallToolResult, Cleared, error) {
	if err := h.d.Inbox.Cancel(ctx, in.Kind, in.ID); err != nil {
		return nil, Cleared{}, err
	}
	return text(fmt.Sprintf("cleared %s %d", in.Kind, in.ID)), Cleared{Cleared: 1}, nil
}

func (h *handlers) markTodosDone(ctx context.Context, _ *mcp.CallToolRequest, in markIn) (*mcp.CallToolResult, Cleared, error) {
	n, err := h.d.Inbox.MarkDone(ctx, in.IDs)
	if err != nil {
		return nil, Cleared{}, err
	}
	return text(fmt.Sprintf("cleared %d of %d", n, len(in.IDs))), Cleared{Cleared: n}, nil
}

type statusTextIn struct {
	Text string `json:"text" jsonschema:"one line, max 200 chars"`
}

// StatusOut is the answer of set_status.
type StatusOut struct {
	Text  string `json:"text"`
	SetAt int64  `json:"set_at"`
}

func (h *handlers) setStatus(ctx context.Context, _ *mcp.CallToolRequest, in statusTextIn) (*mcp.CallToolResult, StatusOut, error) {
	if strings.ContainsAny(in.Text, "\r\n") {
		return nil, StatusOut{}, errors.New("text: must be a single line")
	}
	if n := len([]rune(in.Text)); n > 200 {
		return nil, StatusOut{}, fmt.Errorf("text: %d chars, at most 200", n)
	}
	// A new file renamed into place: a symlink planted at the path is
	// replaced, never followed.
	if err := paths.ReplaceFile(h.d.Layout.Status(), []byte(in.Text)); err != nil {
		return nil, StatusOut{}, fmt.Errorf("write status file: %w", err)
	}
	if in.Text == "" {
		return text("status cleared"), StatusOut{SetAt: time.Now().Unix()}, nil
	}
	return text("status set"), StatusOut{Text: in.Text, SetAt: time.Now().Unix()}, nil
}

func (h *handlers) addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: LooseEndsURI, Name: "loose-ends", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			le, err := h.looseEnds(ctx)
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(le)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: LooseEndsURI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: TaskURIPrefix + "{id}", Name: "task", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, TaskURIPrefix)
			info, err := h.d.Jobs.Lookup(ctx, id)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			b, _ := json.Marshal(h.taskStatus(info))
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}
