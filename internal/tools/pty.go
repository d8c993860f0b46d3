package tools

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

type ptyOpenIn struct {
	Cmd    string            `json:"cmd,omitempty" jsonschema:"default: bash --norc --noprofile"`
	Cwd    string            `json:"cwd,omitempty"`
	Env    map[string]string `json:"env,omitempty"`
	Cols   int               `json:"cols,omitempty" jsonschema:"default 120"`
	Rows   int               `json:"rows,omitempty" jsonschema:"default 40"`
	Name   string            `json:"name,omitempty"`
	Limits *limitsArg        `json:"limits,omitempty"`
}

// PTYInfo describes a PTY session.
type PTYInfo struct {
	SessionID string `json:"session_id"`
	Name      string `json:"name,omitempty"`
	Cmd       string `json:"cmd"`
	Pid       int    `json:"pid"`
	Cols      int    `json:"cols"`
	Rows      int    `json:"rows"`
	view.SessionState
	Bytes int64 `json:"bytes"`
}

// PTYOpened is terminal_pty_open's answer: the session, and how each of
// its limits is enforced (rlimit or none: a session has no cgroup).
type PTYOpened struct {
	PTYInfo
	LimitsEnforcedBy limits.Enforced `json:"limits_enforced_by,omitempty"`
}

type ptySendIn struct {
	SessionID string   `json:"session_id"`
	Input     string   `json:"input,omitempty" jsonschema:"text; \u0003 is Ctrl-C"`
	Keys      []string `json:"keys,omitempty" jsonschema:"after input: Enter, Tab, Up, C-c…"`
	WaitMs    *int     `json:"wait_ms,omitempty" jsonschema:"or return after this quiet time"`
	WaitFor   string   `json:"wait_for,omitempty" jsonschema:"regex (30 s max)"`
}

// PTYOutput is the answer of terminal_pty_send and terminal_pty_read.
type PTYOutput struct {
	Data         string `json:"data"`
	Offset       int64  `json:"offset"`
	NextOffset   int64  `json:"next_offset"`
	DroppedBytes int64  `json:"dropped_bytes,omitempty"`
	Matched      bool   `json:"matched,omitempty"`
	view.SessionState
	Screen    string `json:"screen,omitempty"`
	CursorRow int    `json:"cursor_row,omitempty"`
	CursorCol int    `json:"cursor_col,omitempty"`
}

type ptyReadIn struct {
	SessionID   string `json:"session_id"`
	SinceOffset int64  `json:"since_offset,omitempty"`
	Screen      bool   `json:"screen,omitempty"`
	Raw         bool   `json:"raw,omitempty"`
	MaxKB       int    `json:"max_kb,omitempty" jsonschema:"default 64"`
}

type ptyResizeIn struct {
	SessionID string `json:"session_id"`
	Cols      int    `json:"cols"`
	Rows      int    `json:"rows"`
}

type ptyIDIn struct {
	SessionID string `json:"session_id"`
}

// PTYList is terminal_pty_list's answer.
type PTYList struct {
	Sessions []PTYInfo `json:"sessions"`
}

func ptyInfo(in view.Session) PTYInfo {
	return PTYInfo{SessionID: in.ID, Name: in.Name, Cmd: in.Cmd, Pid: in.Pid, Cols: in.Cols, Rows: in.Rows,
		SessionState: in.SessionState, Bytes: in.Bytes}
}

func ptyOutput(r service.PTYOutput) PTYOutput {
	return PTYOutput{Data: r.Data, Offset: r.Offset, NextOffset: r.Next, DroppedBytes: r.Skipped,
		Matched: r.Matched, SessionState: r.SessionState}
}

func (h *handlers) addPTY(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "terminal_pty_open", Description: "Open a persistent shell (or program) on a PTY."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyOpenIn) (*mcp.CallToolResult, PTYOpened, error) {
			if err := checkCmdNUL(in.Cmd, in.Cwd, in.Env); err != nil {
				return nil, PTYOpened{}, err
			}
			dir, err := resolveDir(h.sess, in.Cwd)
			if err != nil {
				return nil, PTYOpened{}, err
			}
			env, err := sessionEnv(h.sess, in.Env)
			if err != nil {
				return nil, PTYOpened{}, err
			}
			if _, ok := in.Env["TERM"]; !ok {
				env = append(env, "TERM=xterm-256color")
			}
			v, err := h.d.OpenPTY(service.PTYOpen{Cmd: in.Cmd, Cwd: dir, Env: dedupEnv(env), Cols: in.Cols, Rows: in.Rows, Name: in.Name, Limits: in.Limits.of()})
			if err != nil {
				return nil, PTYOpened{}, err
			}
			info := ptyInfo(v)
			return text(fmt.Sprintf("pty session %s (pid %d, %dx%d)", info.SessionID, info.Pid, info.Cols, info.Rows)),
				PTYOpened{PTYInfo: info, LimitsEnforcedBy: v.LimitsEnforcedBy}, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_send", Description: "Type into a PTY; returns output until it waits for input."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptySendIn) (*mcp.CallToolResult, PTYOutput, error) {
			req := service.PTYSend{Session: in.SessionID, Input: in.Input, Keys: in.Keys}
			if in.WaitMs != nil {
				if *in.WaitMs < 0 || *in.WaitMs > 60000 {
					return nil, PTYOutput{}, fmt.Errorf("wait_ms %d: must be 0..60000", *in.WaitMs)
				}
				wait := time.Duration(*in.WaitMs) * time.Millisecond
				req.Wait = &wait
			}
			if in.WaitFor != "" {
				re, err := regexp.Compile(in.WaitFor)
				if err != nil {
					return nil, PTYOutput{}, fmt.Errorf("wait_for: bad regex: %v", err)
				}
				req.WaitFor = re
			}
			r, err := h.d.SendPTY(ctx, req)
			if err != nil {
				return nil, PTYOutput{}, err
			}
			out := ptyOutput(r)
			var note string
			switch {
			case req.Wait == nil && req.WaitFor == nil:
				if r.Busy {
					note = fmt.Sprintf("[still busy after %s]", r.Limit)
				}
			case req.WaitFor == nil && *req.Wait == 0: // Wait is set: both nil was the case above
				return text("sent"), out, nil
			case req.WaitFor != nil && !r.Matched:
				note = fmt.Sprintf("[wait_for %q did not match within %s]", in.WaitFor, r.Limit)
			}
			return replyPTY(h.sess, out, note), out, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_read", Description: "PTY output since an offset (ANSI stripped unless raw), or the screen."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyReadIn) (*mcp.CallToolResult, PTYOutput, error) {
			maxKB := in.MaxKB
			if maxKB == 0 {
				maxKB = defaultPageKB
			}
			if maxKB < 1 || maxKB > maxPageKB {
				return nil, PTYOutput{}, fmt.Errorf("max_kb %d: must be 1..%d", maxKB, maxPageKB)
			}
			if in.Screen {
				info, sc, err := h.d.PTYScreen(in.SessionID)
				if err != nil {
					return nil, PTYOutput{}, err
				}
				out := PTYOutput{Screen: sc.Text, CursorRow: sc.CursorRow, CursorCol: sc.CursorCol,
					SessionState: info.SessionState, Offset: info.Bytes, NextOffset: info.Bytes}
				return h.sess.reply(fmt.Sprintf("screen %d bytes in structuredContent, cursor at %d,%d", len(sc.Text), sc.CursorRow, sc.CursorCol),
					func() string { return sc.Text }), out, nil
			}
			r, err := h.d.ReadPTY(in.SessionID, in.SinceOffset, in.Raw, maxKB<<10)
			if err != nil {
				return nil, PTYOutput{}, err
			}
			out := ptyOutput(r)
			if r.Ended != nil {
				// A session that ended (closed, or with a daemon that
				// stopped) still reads from its output file; the answer
				// says what became of it.
				return replyPTY(h.sess, out, "["+r.Ended.Error()+"]"), out, nil
			}
			return replyPTY(h.sess, out, ""), out, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_resize", Description: "Resize a PTY session."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyResizeIn) (*mcp.CallToolResult, PTYInfo, error) {
			v, err := h.d.ResizePTY(in.SessionID, in.Cols, in.Rows)
			if err != nil {
				return nil, PTYInfo{}, err
			}
			info := ptyInfo(v)
			return text(fmt.Sprintf("resized to %dx%d", info.Cols, info.Rows)), info, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_close", Description: "Close a PTY: SIGHUP, then SIGKILL to all it started."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyIDIn) (*mcp.CallToolResult, PTYInfo, error) {
			v, err := h.d.ClosePTY(in.SessionID)
			if err != nil {
				return nil, PTYInfo{}, err
			}
			info := ptyInfo(v)
			return text("closed " + info.SessionID), info, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_list", Description: "List PTY sessions."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, PTYList, error) {
			out := PTYList{Sessions: []PTYInfo{}}
			var b strings.Builder
			for _, in := range h.d.PTYs() {
				out.Sessions = append(out.Sessions, ptyInfo(in))
				fmt.Fprintf(&b, "%s\t%s\trunning=%v\t%s\n", in.ID, in.Name, in.Running, in.Cmd)
			}
			if len(out.Sessions) == 0 {
				return text("no pty sessions"), out, nil
			}
			return h.sess.reply(fmt.Sprintf("%d pty sessions in structuredContent", len(out.Sessions)),
				func() string { return strings.TrimRight(b.String(), "\n") }), out, nil
		})
}

// replyPTY is the text block of PTY output: the data only in a text
// session (structuredContent has it otherwise), then the note if any.
func replyPTY(sess *Session, out PTYOutput, note string) *mcp.CallToolResult {
	brief := fmt.Sprintf("bytes [%d, %d)", out.Offset, out.NextOffset)
	if out.Data != "" {
		brief += " in structuredContent"
	}
	if out.DroppedBytes > 0 {
		brief += fmt.Sprintf("; %d earlier bytes no longer kept", out.DroppedBytes)
	}
	return sess.reply(strings.TrimSpace(brief+"\n"+note), func() string {
		msg := out.Data
		if note != "" && msg != "" && !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		return msg + note
	})
}
