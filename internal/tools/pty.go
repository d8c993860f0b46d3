package tools

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/pty"
	"github.com/hivetools/hive/internal/view"
)

type ptyOpenIn struct {
	Cmd  string            `json:"cmd,omitempty" jsonschema:"default: bash --norc --noprofile"`
	Cwd  string            `json:"cwd,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	Cols int               `json:"cols,omitempty" jsonschema:"default 120"`
	Rows int               `json:"rows,omitempty" jsonschema:"default 40"`
	Name string            `json:"name,omitempty"`
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

type ptySendIn struct {
	SessionID string   `json:"session_id"`
	Input     string   `json:"input,omitempty" jsonschema:"text; \u0003 is Ctrl-C"`
	Keys      []string `json:"keys,omitempty" jsonschema:"keys after input: Enter, Tab, Up, C-c…"`
	WaitMs    *int     `json:"wait_ms,omitempty" jsonschema:"or return after this quiet time"`
	WaitFor   string   `json:"wait_for,omitempty" jsonschema:"regex to wait for (30 s max)"`
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
	Screen      bool   `json:"screen,omitempty" jsonschema:"rendered screen instead"`
	Raw         bool   `json:"raw,omitempty" jsonschema:"keep ANSI escapes"`
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

func ptyInfo(in pty.Info) PTYInfo {
	return PTYInfo{SessionID: in.ID, Name: in.Name, Cmd: in.Cmd, Pid: in.Pid, Cols: in.Cols, Rows: in.Rows,
		SessionState: in.SessionState, Bytes: in.Bytes}
}

// readyLimit bounds terminal_pty_send's default wait for the program to
// want input again.
const readyLimit = 10 * time.Second

func ptyOutput(r pty.ReadResult) PTYOutput {
	return PTYOutput{Data: r.Data, Offset: r.Offset, NextOffset: r.Next, DroppedBytes: r.Skipped,
		Matched: r.Matched, SessionState: r.SessionState}
}

func (h *handlers) addPTY(s *mcp.Server, m *pty.Manager) {
	addTool(s, &mcp.Tool{Name: "terminal_pty_open", Description: "Open a persistent shell (or program) on a PTY; returns session_id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyOpenIn) (*mcp.CallToolResult, PTYInfo, error) {
			if err := checkCmdNUL(in.Cmd, in.Cwd, in.Env); err != nil {
				return nil, PTYInfo{}, err
			}
			dir, err := resolveDir(h.sess, in.Cwd)
			if err != nil {
				return nil, PTYInfo{}, err
			}
			env, err := sessionEnv(h.sess, in.Env)
			if err != nil {
				return nil, PTYInfo{}, err
			}
			if _, ok := in.Env["TERM"]; !ok {
				env = append(env, "TERM=xterm-256color")
			}
			sess, err := m.Open(pty.OpenOptions{Cmd: in.Cmd, Cwd: dir, Env: dedupEnv(env), Cols: in.Cols, Rows: in.Rows, Name: in.Name})
			if err != nil {
				return nil, PTYInfo{}, err
			}
			info := ptyInfo(sess.Info())
			return text(fmt.Sprintf("pty session %s (pid %d, %dx%d)", info.SessionID, info.Pid, info.Cols, info.Rows)), info, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_send", Description: "Type into a PTY; returns output until it waits for input."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptySendIn) (*mcp.CallToolResult, PTYOutput, error) {
			sess, err := m.Get(in.SessionID)
			if err != nil {
				return nil, PTYOutput{}, err
			}
			input := in.Input
			if len(in.Keys) > 0 {
				k, err := pty.KeySequence(in.Keys)
				if err != nil {
					return nil, PTYOutput{}, err
				}
				input += k
			}
			if input == "" {
				return nil, PTYOutput{}, errors.New("input: give input or keys")
			}
			var wait time.Duration
			if in.WaitMs != nil {
				if *in.WaitMs < 0 || *in.WaitMs > 60000 {
					return nil, PTYOutput{}, fmt.Errorf("wait_ms %d: must be 0..60000", *in.WaitMs)
				}
				wait = time.Duration(*in.WaitMs) * time.Millisecond
			}
			var re *regexp.Regexp
			if in.WaitFor != "" {
				if re, err = regexp.Compile(in.WaitFor); err != nil {
					return nil, PTYOutput{}, fmt.Errorf("wait_for: bad regex: %v", err)
				}
			}
			if in.WaitMs == nil && re == nil {
				// The default: until the program waits for input again.
				wctx, cancel := context.WithTimeout(ctx, readyLimit)
				defer cancel()
				r, err := sess.SendReady(wctx, input)
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return nil, PTYOutput{}, err
				}
				out := ptyOutput(r)
				var note string
				if err != nil {
					note = fmt.Sprintf("[still busy after %s]", readyLimit)
				}
				return replyPTY(h.sess, out, note), out, nil
			}
			if wait == 0 && re == nil {
				start := sess.Info().Bytes
				if err := sess.Send(input); err != nil {
					return nil, PTYOutput{}, err
				}
				info := sess.Info()
				out := PTYOutput{Offset: start, NextOffset: start, SessionState: info.SessionState}
				return text("sent"), out, nil
			}
			limit := 30 * time.Second
			if re == nil {
				limit = wait + 10*time.Second
			}
			wctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			r, err := sess.SendWait(wctx, input, wait, re)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return nil, PTYOutput{}, err
			}
			out := ptyOutput(r)
			var note string
			if re != nil && !r.Matched {
				note = fmt.Sprintf("[wait_for %q did not match within %s]", in.WaitFor, limit)
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
			sess, err := m.Get(in.SessionID)
			if errors.Is(err, pty.ErrEnded) && !in.Screen {
				// A session that ended (closed, or with a daemon that
				// stopped) still reads from its output file; the answer
				// says what became of it.
				r, rerr := m.ReadEnded(in.SessionID, in.SinceOffset, in.Raw, maxKB<<10)
				if rerr != nil {
					return nil, PTYOutput{}, fmt.Errorf("%w; reading its output: %w", err, rerr)
				}
				out := PTYOutput{Data: r.Data, Offset: r.Offset, NextOffset: r.Next, DroppedBytes: r.Skipped, SessionState: r.SessionState}
				return replyPTY(h.sess, out, "["+err.Error()+"]"), out, nil
			}
			if err != nil {
				return nil, PTYOutput{}, err
			}
			info := sess.Info()
			if in.Screen {
				sc := sess.Screen()
				out := PTYOutput{Screen: sc.Text, CursorRow: sc.CursorRow, CursorCol: sc.CursorCol,
					SessionState: info.SessionState, Offset: info.Bytes, NextOffset: info.Bytes}
				return h.sess.reply(fmt.Sprintf("screen %d bytes in structuredContent, cursor at %d,%d", len(sc.Text), sc.CursorRow, sc.CursorCol),
					func() string { return sc.Text }), out, nil
			}
			r, err := sess.Read(in.SinceOffset, in.Raw, maxKB<<10)
			if err != nil {
				return nil, PTYOutput{}, err
			}
			out := PTYOutput{Data: r.Data, Offset: r.Offset, NextOffset: r.Next, DroppedBytes: r.Skipped,
				SessionState: r.SessionState}
			return replyPTY(h.sess, out, ""), out, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_resize", Description: "Resize a PTY session."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyResizeIn) (*mcp.CallToolResult, PTYInfo, error) {
			sess, err := m.Get(in.SessionID)
			if err != nil {
				return nil, PTYInfo{}, err
			}
			if err := sess.Resize(in.Cols, in.Rows); err != nil {
				return nil, PTYInfo{}, err
			}
			info := ptyInfo(sess.Info())
			return text(fmt.Sprintf("resized to %dx%d", info.Cols, info.Rows)), info, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_close", Description: "Close a PTY session: SIGHUP, then SIGKILL to all it started."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ptyIDIn) (*mcp.CallToolResult, PTYInfo, error) {
			sess, err := m.Get(in.SessionID)
			if err != nil {
				return nil, PTYInfo{}, err
			}
			if err := sess.Close(); err != nil {
				return nil, PTYInfo{}, err
			}
			info := ptyInfo(sess.Info())
			return text("closed " + info.SessionID), info, nil
		})
	addTool(s, &mcp.Tool{Name: "terminal_pty_list", Description: "List PTY sessions."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, PTYList, error) {
			out := PTYList{Sessions: []PTYInfo{}}
			var b strings.Builder
			for _, in := range m.List() {
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
