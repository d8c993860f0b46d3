// Package tools is hive's MCP surface: it builds one mcp.Server per
// client session with the tool groups that session asked for. Every tool
// is a thin view over the daemon's engines (jobs, inbox, PTYs, search).
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/service"
)

// Group names.
const (
	GroupExecution = "execution"
	GroupTerminal  = "terminal"
	GroupSearch    = "search"
	GroupInbox     = "inbox"
	GroupMeta      = "meta"
	GroupSwarm     = "swarm"
)

// AllGroups is the default selection. The "always" tools come with any.
var AllGroups = []string{GroupExecution, GroupTerminal, GroupSearch, GroupInbox, GroupMeta, GroupSwarm}

// Session is what hive knows of one client session.
type Session struct {
	Cwd string   // the client's working directory
	Env []string // the client's environment (nil: the daemon's)
	// ID names the session in logs. Where one Server serves many
	// transport sessions (streamable HTTP), the logs name each of them as
	// LogID(ID, its transport session id).
	ID string
	// Answers is the form of this session's tool answers: AnswersStructured
	// (structuredContent with the data, a text block that leaves the bulk
	// out) or AnswersText (the text block alone, with the bulk; no output
	// schemas). See docs/answers.md. If Answers is empty, AnswersStructured.
	Answers string

	baseOnce sync.Once
	base     []string // Env (or the daemon's) deduplicated, under the shell policy
}

// baseEnv is the environment commands of this session start from. It is
// worked out once; callers must not change its elements.
func (s *Session) baseEnv() []string {
	s.baseOnce.Do(func() {
		env := s.Env
		if env == nil {
			env = os.Environ()
		}
		s.base = policyEnv(dedupEnv(env))
	})
	return s.base[:len(s.base):len(s.base)] // an append copies
}

// Answer forms (Session.Answers).
const (
	AnswersStructured = "structured"
	AnswersText       = "text"
)

// ParseAnswers validates an answer form; "" is AnswersStructured.
func ParseAnswers(a string) (string, error) {
	switch a {
	case "", AnswersStructured:
		return AnswersStructured, nil
	case AnswersText:
		return AnswersText, nil
	}
	return "", fmt.Errorf("answers: unknown form %q (known: %s, %s)", a, AnswersStructured, AnswersText)
}

// textAnswers reports whether the session takes its answers as text alone.
func (s *Session) textAnswers() bool { return s.Answers == AnswersText }

// reply is a tool's text block. In a structured session it is brief: the
// small fields, while structuredContent carries the bulk (output, matches,
// pages). In a text session it is full(), the only copy of the answer,
// bulk included. Either way the bulk is sent once.
func (s *Session) reply(brief string, full func() string) *mcp.CallToolResult {
	if s.textAnswers() {
		return text(full())
	}
	return text(brief)
}

// GroupAlways names the tools every session has (set_status, compact,
// mark_todos_done); asking for it alone gives only those.
const GroupAlways = "always"

// LegacyGroups are group names of the system hive grew from: accepted,
// granting no tool (their tools are other servers' now).
var LegacyGroups = []string{"messaging", "web_tools", "manage_root_agent"}

// ParseGroups validates a group list. No names at all means AllGroups;
// names that grant no tool (always, the legacy ones) leave only the tools
// every session has. An unknown name is an error listing the known ones.
func ParseGroups(groups []string) ([]string, error) {
	named := false
	out := []string{}
	for _, g := range groups {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		named = true
		switch {
		case g == GroupAlways, slices.Contains(LegacyGroups, g):
			if !slices.Contains(out, GroupAlways) {
				out = append(out, GroupAlways)
			}
		case slices.Contains(AllGroups, g):
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		default:
			return nil, fmt.Errorf("groups: unknown group %q (known: %s; accepted, granting no tool: %s)",
				g, strings.Join(append(AllGroups[:len(AllGroups):len(AllGroups)], GroupAlways), ", "), strings.Join(LegacyGroups, ", "))
		}
	}
	if !named {
		return AllGroups, nil
	}
	return out, nil
}

// legacyLogged remembers the legacy group names already logged.
var legacyLogged sync.Map

// logLegacy logs, once per daemon, each legacy group name a session asked for.
func logLegacy(log *slog.Logger, groups []string) {
	for _, g := range groups {
		g = strings.TrimSpace(g)
		if slices.Contains(LegacyGroups, g) {
			if _, seen := legacyLogged.LoadOrStore(g, true); !seen {
				log.Info("tool group of the old system accepted, granting no tool", "group", g)
			}
		}
	}
}

// NewServer builds the MCP server of one session. The returned stop func
// detaches it from the inbox and waits for its notification sender; call it
// once the session's transport is closed (a send blocked on a client that
// stopped reading ends only then).
func NewServer(d *service.Service, sess *Session, groups []string) (*mcp.Server, func(), error) {
	asked := groups
	groups, err := ParseGroups(groups)
	if err != nil {
		return nil, nil, err
	}
	if sess.Answers, err = ParseAnswers(sess.Answers); err != nil {
		return nil, nil, err
	}
	term := &terminal{d: d, handles: d.Handles}
	srv := mcp.NewServer(&mcp.Implementation{Name: "hive", Version: d.Version}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Logging:      &mcp.LoggingCapabilities{},
			Experimental: map[string]any{ChannelCapability: map[string]any{}},
		},
		Instructions: Instructions(groups),
	})
	logLegacy(d.Logger, asked)
	directs.Store(srv, &Direct{log: d.Logger, act: d.Activity, sess: sess, tools: map[string]mcp.ToolHandler{}})
	srv.AddReceivingMiddleware(defaultLogLevel)
	srv.AddReceivingMiddleware(envelope(d.Logger, sess, d.Activity))
	if sess.textAnswers() {
		srv.AddReceivingMiddleware(textOnly)
	}
	h := &handlers{d: d, sess: sess}
	if slices.Contains(groups, GroupExecution) {
		h.addExecution(srv)
	}
	if slices.Contains(groups, GroupInbox) {
		h.addInbox(srv)
	}
	if slices.Contains(groups, GroupTerminal) {
		h.addTerminal(srv, term)
		if d.HasPTY() {
			h.addPTY(srv)
		}
	}
	if slices.Contains(groups, GroupSearch) {
		h.addSearch(srv)
	}
	if slices.Contains(groups, GroupMeta) {
		h.addMeta(srv)
	}
	if slices.Contains(groups, GroupSwarm) {
		h.addSwarm(srv)
	}
	h.addAlways(srv)
	h.addResources(srv)
	// Each server sends its notifications from its own goroutine, fed
	// through a bounded queue: a client that stops reading delays only its
	// own notifications, never the inbox or other sessions. When the queue
	// is full, changes for this session are dropped (get_loose_ends always
	// has the current state).
	notes := make(chan service.Change, 1024)
	quit := make(chan struct{})
	var dropped atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Channel events wait in co until due; timer fires then.
		var co coalescer
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		armed := false
		for {
			select {
			case c := <-notes:
				notifyChange(srv, c)
				if len(notes) == 0 && dropped.Swap(false) {
					// Some changes were dropped: one more update tells
					// subscribers to read the current state.
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: LooseEndsURI})
					cancel()
				}
				ev, removes, ok := channelEventOf(d, c)
				switch {
				case ok:
					due, queued := co.add(ev, time.Now())
					if queued && !armed {
						timer.Reset(time.Until(due))
						armed = true
					}
				case removes != "":
					co.remove(removes)
				}
			case <-timer.C:
				armed = false
				if p, ok := co.take(time.Now()); ok {
					sendChannel(srv, p)
				}
			case <-quit:
				return
			}
		}
	}()
	unsub := d.Subscribe(func(c service.Change) {
		select {
		case notes <- c:
		default:
			if !dropped.Swap(true) {
				d.Logger.Warn("notifications dropped: session not reading", "session", sess.ID)
			}
		}
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			unsub()
			close(quit)
			wg.Wait()
			directs.Delete(srv)
		})
	}
	return srv, stop, nil
}

// defaultLogLevel sets the session's log level to info once it is
// initialized (initialize, or server/discover for a client of the
// stateless protocol), as if the client had asked for it: the go-sdk
// sends no log message until a client calls logging/setLevel, and few
// clients do, so a job's end would reach none of them. A client's own
// setLevel comes later and wins.
func defaultLogLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		// A client of the stateless protocol (2026-07-28: the go-sdk's own
		// client since v1.8) starts with server/discover, never initialize.
		if (method == "initialize" || method == "server/discover") && err == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				next(ctx, "logging/setLevel", &mcp.ServerRequest[*mcp.SetLoggingLevelParams]{
					Session: ss, Params: &mcp.SetLoggingLevelParams{Level: "info"}})
			}
		}
		return res, err
	}
}

// notifyChange pushes a loose-end change to the server's sessions: a
// resources/updated to subscribers and an info log (every session has a
// level: see defaultLogLevel).
func notifyChange(srv *mcp.Server, c service.Change) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: LooseEndsURI})
	var msg map[string]any
	switch c.Kind {
	case service.ChangeMessage:
		srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: InboxURI})
		if c.Removed {
			return // read, acked or dropped: the resources tell
		}
		msg = map[string]any{"inbox": "message", "id": c.Message.ID, "from": c.Message.From, "preview": c.Message.Preview}
	case service.ChangeReminder:
		msg = map[string]any{"loose_end": "reminder", "id": c.Reminder.ID, "due_at": c.Reminder.Due.Unix()}
		if c.Removed {
			msg["removed"] = true
		} else {
			msg["preview"] = c.Reminder.Preview
		}
	default:
		if c.Todo.Subsystem == service.TodoSubsystem {
			srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: TaskURIPrefix + c.Todo.Key})
		}
		msg = map[string]any{"loose_end": "todo", "id": c.Todo.ID, "subsystem": c.Todo.Subsystem, "key": c.Todo.Key}
		if c.Removed {
			msg["cleared"] = true
		} else {
			msg["summary"] = c.Todo.Summary
		}
	}
	for ss := range srv.Sessions() {
		ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "hive", Data: msg})
	}
}

// LogID is how logs name a session: base, and for a transport with
// session ids (streamable HTTP) base + "-" + the first 8 characters of
// the transport's id. Never the whole id: it is a credential.
func LogID(base, transportID string) string {
	if transportID == "" {
		return base
	}
	if len(transportID) > 8 {
		transportID = transportID[:8]
	}
	return base + "-" + transportID
}

// envelope logs every tool call before and after: time, session, tool,
// arguments, duration, outcome.
func envelope(log *slog.Logger, sess *Session, act *service.Activity) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			var tool string
			var args json.RawMessage
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
				tool, args = p.Name, p.Arguments
			}
			c := beginCall(log, sess, ss, tool, args)
			res, err := next(ctx, method, req)
			r, _ := res.(*mcp.CallToolResult)
			c.end(log, act, r, err)
			return res, err
		}
	}
}

// call is a tool call the envelope logged; end logs its outcome and
// tells the activity.
type call struct {
	id, client, tool string
	t0               time.Time
}

// logInfo logs msg with attrs at Info, as log.LogAttrs does but without
// the caller's program counter: Logger.log walks the stack for it on
// every record (runtime.Callers), and only a handler that adds the
// source uses it; the daemon's does not. Two records a tool call.
func logInfo(log *slog.Logger, msg string, attrs ...slog.Attr) {
	ctx := context.Background()
	if !log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	_ = log.Handler().Handle(ctx, r)
}

// beginCall logs a tool call ("tool call": session, tool, the first 2 KiB
// of its arguments).
func beginCall(log *slog.Logger, sess *Session, ss *mcp.ServerSession, tool string, args json.RawMessage) call {
	c := call{id: sess.ID, tool: tool}
	if ss != nil {
		c.id = LogID(sess.ID, ss.ID())
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			c.client = p.ClientInfo.Name
		}
	}
	if len(args) > 2048 {
		args = append(json.RawMessage(nil), args[:2048]...)
	}
	logInfo(log, "tool call", slog.String("session", c.id), slog.String("tool", tool), slog.String("args", string(args)))
	c.t0 = time.Now()
	return c
}

func (c call) end(log *slog.Logger, act *service.Activity, r *mcp.CallToolResult, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error: " + err.Error()
	} else if r != nil && r.IsError {
		outcome = "tool error"
		if len(r.Content) > 0 {
			if tc, ok := r.Content[0].(*mcp.TextContent); ok {
				outcome = "tool error: " + tc.Text
			}
		}
	}
	logInfo(log, "tool done", slog.String("session", c.id), slog.String("tool", c.tool), slog.Int64("duration_ms", time.Since(c.t0).Milliseconds()), slog.String("outcome", outcome))
	act.Add(service.Call{At: c.t0, Session: c.id, Client: c.client, Tool: c.tool, DurationMs: time.Since(c.t0).Milliseconds(), Outcome: outcome})
}

// textOnly makes a session's answers text alone: tools/list without
// output schemas (so no client expects structuredContent) and tool results
// without structuredContent (the handlers' text blocks carry the bulk).
func textOnly(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err // no result (a nil one of the method's type)
		}
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			if r == nil {
				break
			}
			c := *r
			c.Tools = make([]*mcp.Tool, len(r.Tools))
			for i, t := range r.Tools {
				tc := *t
				tc.OutputSchema = nil
				c.Tools[i] = &tc
			}
			return &c, err
		case *mcp.CallToolResult:
			if r != nil {
				r.StructuredContent = nil
			}
		}
		return res, err
	}
}

type handlers struct {
	d    *service.Service
	sess *Session
}

// text makes a result with one text content.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
