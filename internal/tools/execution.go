package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/service"
	"github.com/hivetools/hive/internal/view"
)

// maxWait caps wait_seconds of run and status.
const maxWait = 30

// tailBytes is how much of each stream status shows.
const tailBytes = 4 << 10

type runIn struct {
	Cmd         string     `json:"cmd"`
	TimeoutSecs *float64   `json:"timeout_secs,omitempty" jsonschema:"stop after N s (timed_out)"`
	WaitSeconds *float64   `json:"wait_seconds,omitempty" jsonschema:"inline wait (3; max 30)"`
	Name        string     `json:"name,omitempty" jsonschema:"[a-z0-9-]{1,63}; also an id"`
	Limits      *limitsArg `json:"limits,omitempty"`
}

type statusIn struct {
	ID          string   `json:"id"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"max 30"`
}

type killIn struct {
	ID    string `json:"id"`
	Force bool   `json:"force,omitempty"`
}

// jobState is how a job stands, in the seeds' words (status for the
// view's state, exit_code): every tool answer about a job carries it,
// spelled once.
type jobState struct {
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code"`
}

func stateOf(in view.Job) jobState { return jobState{Status: in.State, ExitCode: in.ExitCode} }

// label is how answers name a job: its id, and the name its caller
// chose if any ("ab12cd34 (build)"), as its loose end does.
func label(id, name string) string {
	if name == "" {
		return id
	}
	return id + " (" + name + ")"
}

// TaskStatus is the structured answer of run and status.
type TaskStatus struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	jobState
	Signal        *int   `json:"signal,omitempty"`
	Error         string `json:"error,omitempty"`
	DurationMs    int64  `json:"duration_ms"`
	StdoutTail    string `json:"stdout_tail,omitempty"`
	StderrTail    string `json:"stderr_tail,omitempty"`
	StdoutPath    string `json:"stdout_path,omitempty"`
	StderrPath    string `json:"stderr_path,omitempty"`
	StdoutBytes   int64  `json:"stdout_bytes"`
	StderrBytes   int64  `json:"stderr_bytes"`
	StdoutDropped int64  `json:"stdout_dropped,omitempty"`
	StderrDropped int64  `json:"stderr_dropped,omitempty"`
	Leftover      int    `json:"leftover_processes,omitempty"`
	Note          string `json:"note,omitempty"`

	// SemanticStatus and SemanticMessage are terminal_exec's meaning of
	// the end (see meaningOf); absent while the task runs.
	SemanticStatus  string `json:"semantic_status,omitempty"`
	SemanticMessage string `json:"semantic_message,omitempty"`
	limitsOut
}

func (h *handlers) addExecution(s *mcp.Server) {
	addTool(s, &mcp.Tool{Name: "run", Description: "Run a bash command: its result if it ends within wait_seconds, else an id."}, h.run)
	addTool(s, &mcp.Tool{Name: "status", Description: "A task's state and last 4 KiB of output."}, h.status)
	addTool(s, &mcp.Tool{Name: "kill", Description: "Stop a task: SIGINT to its group (SIGKILL with force); does not wait."}, h.kill)
}

// waitArg validates a wait_seconds argument: default def, clamped to
// maxWait (with a note).
func waitArg(p *float64, def float64) (time.Duration, string, error) {
	w := def
	if p != nil {
		w = *p
	}
	if w < 0 || w != w {
		return 0, "", fmt.Errorf("wait_seconds %v: must be >= 0", w)
	}
	note := ""
	if w > maxWait {
		note = fmt.Sprintf("wait_seconds %v clamped to %d", w, maxWait)
		w = maxWait
	}
	return time.Duration(w * float64(time.Second)), note, nil
}

func (h *handlers) run(ctx context.Context, _ *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, TaskStatus, error) {
	if strings.TrimSpace(in.Cmd) == "" {
		return nil, TaskStatus{}, errors.New("cmd: must not be empty")
	}
	if err := service.CheckNUL("cmd", in.Cmd); err != nil {
		return nil, TaskStatus{}, err
	}
	timeout, err := seconds(in.TimeoutSecs, 0, "timeout_secs")
	if err != nil {
		return nil, TaskStatus{}, err
	}
	wait, note, err := waitArg(in.WaitSeconds, 3)
	if err != nil {
		return nil, TaskStatus{}, err
	}
	// A command without shell syntax runs directly, as terminal_exec runs
	// it (a bash less to start); one whose program is not found still
	// gets bash's "command not found" (ShellFallback).
	argv, kind, _, err := plan(in.Cmd, shellArg{})
	if err != nil {
		return nil, TaskStatus{}, err
	}
	if kind != "direct" {
		argv, kind = nil, ""
	}
	j, err := h.d.StartJob(service.JobSpec{Cmd: in.Cmd, Argv: argv, ShellKind: kind, ShellFallback: true, Dir: h.sess.Cwd, Env: h.sess.Env,
		Timeout: timeout, Name: in.Name, Source: "run", Attached: wait > 0, Limits: in.Limits.of()})
	if err != nil {
		return nil, TaskStatus{}, err
	}
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		ended := j.Wait(wctx)
		cancel()
		if !ended {
			switch err := j.Detach(); {
			case errors.Is(err, service.ErrJobEnded):
				ended = true
			case err != nil:
				return nil, TaskStatus{}, err
			}
		}
		if ended {
			// Delivered inline: no loose end follows.
			info, err := h.d.Recorded(j)
			if err != nil {
				return nil, TaskStatus{}, fmt.Errorf("task ran, but %w", err)
			}
			st := h.taskStatus(info)
			st.Note = note
			return h.replyStatus(st), st, nil
		}
	}
	in2, err := h.d.Recorded(j)
	if err != nil {
		return nil, TaskStatus{}, err
	}
	if service.JobEnded(in2) { // failed to start, or already over
		st := h.taskStatus(in2)
		st.Note = note
		return h.replyStatus(st), st, nil
	}
	st := TaskStatus{ID: in2.ID, Name: in2.Name, jobState: jobState{Status: in2.State}, StdoutPath: in2.StdoutPath,
		StderrPath: in2.StderrPath, Note: note}
	msg := "task started: id=" + in2.ID
	if in2.Name != "" {
		msg += " name=" + in2.Name
	}
	if in2.State == "pending" {
		msg += " (pending: the concurrency limit is reached)"
	}
	if note != "" {
		msg += "\n" + note
	}
	return text(msg), st, nil
}

func (h *handlers) status(ctx context.Context, _ *mcp.CallToolRequest, in statusIn) (*mcp.CallToolResult, TaskStatus, error) {
	if in.ID == "" {
		return nil, TaskStatus{}, errors.New("id: must not be empty")
	}
	wait, note, err := waitArg(in.WaitSeconds, 0)
	if err != nil {
		return nil, TaskStatus{}, err
	}
	info, err := h.d.WaitJob(ctx, in.ID, wait)
	if errors.Is(err, service.ErrJobNotFound) {
		return nil, TaskStatus{}, fmt.Errorf("id %q: no such task", in.ID)
	}
	if err != nil {
		return nil, TaskStatus{}, err
	}
	h.d.EndSeen(ctx, info) // the caller has the result now: its completion todo is done
	st := h.taskStatus(info)
	st.Note = note
	return h.replyStatus(st), st, nil
}

// KillOut is the answer of kill and terminal_job_kill.
type KillOut struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	jobState
	AlreadyEnded bool `json:"already_ended,omitempty"`
}

func (h *handlers) kill(ctx context.Context, _ *mcp.CallToolRequest, in killIn) (*mcp.CallToolResult, KillOut, error) {
	if in.ID == "" {
		return nil, KillOut{}, errors.New("id: must not be empty")
	}
	info, err := h.d.KillJob(in.ID, in.Force)
	switch {
	case errors.Is(err, service.ErrJobEnded):
		out := KillOut{ID: info.ID, Name: info.Name, jobState: stateOf(info), AlreadyEnded: true}
		return text(fmt.Sprintf("task %s had already ended (%s)", label(info.ID, info.Name), describeEnd(info))), out, nil
	case errors.Is(err, service.ErrJobNotFound):
		return nil, KillOut{}, fmt.Errorf("id %q: no such task", in.ID)
	case err != nil:
		return nil, KillOut{}, err
	}
	sig := "SIGINT"
	if in.Force {
		sig = "SIGKILL"
	}
	out := KillOut{ID: info.ID, Name: info.Name, jobState: stateOf(info)}
	if service.JobEnded(info) {
		return text(fmt.Sprintf("task %s cancelled before it started", label(info.ID, info.Name))), out, nil
	}
	return text(fmt.Sprintf("%s sent to task %s; its end arrives as a loose end", sig, label(info.ID, info.Name))), out, nil
}

// taskStatus builds the full status of a job, with output tails.
func (h *handlers) taskStatus(in view.Job) TaskStatus {
	st := TaskStatus{
		ID: in.ID, Name: in.Name, jobState: stateOf(in), SemanticStatus: in.SemanticStatus, SemanticMessage: in.SemanticMessage,
		Signal: in.Signal, Error: in.Error, DurationMs: in.DurationMs,
		StdoutPath: in.StdoutPath, StderrPath: in.StderrPath,
		StdoutBytes: in.StdoutBytes, StderrBytes: in.StderrBytes, StdoutDropped: in.StdoutDropped,
		StderrDropped: in.StderrDropped, Leftover: in.Leftover, limitsOut: limitsOutOf(h.d.WithLiveUsage(in)),
	}
	if j, err := h.d.LiveJob(in.ID); err == nil && j.Stdout() != nil {
		st.StdoutTail = decodeTail(j.Stdout().Tail(tailBytes))
		st.StderrTail = decodeTail(j.Stderr().Tail(tailBytes))
	} else {
		st.StdoutTail = decodeTail(fileTail(in.StdoutPath, tailBytes))
		st.StderrTail = decodeTail(fileTail(in.StderrPath, tailBytes))
	}
	return st
}

func fileTail(path string, n int64) []byte {
	f, err := paths.OpenFile(path, os.O_RDONLY) // never through a planted link or fifo
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(fi.Size()-n, 0)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	return b
}

// decodeTail makes text of a tail: a cut rune at the start is dropped and
// invalid bytes are replaced.
func decodeTail(b []byte) string { return decode(skipContinuation(b)) }

func describeEnd(in view.Job) string {
	s := in.State
	if in.ExitCode != nil {
		s += fmt.Sprintf(", exit %d", *in.ExitCode)
	}
	if in.Error != "" {
		s += ": " + in.Error
	}
	return s
}

// replyStatus is the text block of a TaskStatus: its tails only in a text
// session (structuredContent has them otherwise).
func (h *handlers) replyStatus(st TaskStatus) *mcp.CallToolResult {
	return h.sess.reply(renderStatus(st, false), func() string { return renderStatus(st, true) })
}

// renderStatus renders a TaskStatus, with the output tails or not.
func renderStatus(st TaskStatus, tails bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s: %s", label(st.ID, st.Name), st.Status)
	if st.ExitCode != nil {
		fmt.Fprintf(&b, ", exit %d", *st.ExitCode)
	}
	if st.SemanticStatus != "" {
		fmt.Fprintf(&b, " (%s)", meaning{Status: st.SemanticStatus, Message: st.SemanticMessage}.text())
	}
	fmt.Fprintf(&b, ", %s", (time.Duration(st.DurationMs) * time.Millisecond).String())
	if st.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", st.Error)
	}
	if st.Leftover > 0 {
		fmt.Fprintf(&b, "\n%d leftover process(es) in its group were terminated", st.Leftover)
	}
	for _, s := range []struct {
		name, tail, path string
		bytes, dropped   int64
	}{{"stdout", st.StdoutTail, st.StdoutPath, st.StdoutBytes, st.StdoutDropped}, {"stderr", st.StderrTail, st.StderrPath, st.StderrBytes, st.StderrDropped}} {
		if s.bytes == 0 {
			continue
		}
		if !tails {
			fmt.Fprintf(&b, "\n%s: %d bytes in %s", s.name, s.bytes, s.path)
			if s.dropped > 0 {
				fmt.Fprintf(&b, " (%d past the file cap dropped)", s.dropped)
			}
			if s.tail != "" {
				fmt.Fprintf(&b, "; its last %d in structuredContent", len(s.tail))
			}
			continue
		}
		fmt.Fprintf(&b, "\n--- %s (%d bytes, %s", s.name, s.bytes, s.path)
		if s.dropped > 0 {
			fmt.Fprintf(&b, ", %d past the file cap dropped", s.dropped)
		}
		if int64(len(s.tail)) < s.bytes {
			b.WriteString(", last 4 KiB")
		}
		b.WriteString(") ---\n")
		b.WriteString(s.tail)
	}
	if tails { // the text form: no structuredContent tells them
		b.WriteString(st.limitsOut.text())
	}
	if st.Note != "" {
		fmt.Fprintf(&b, "\nnote: %s", st.Note)
	}
	return b.String()
}

func clip(s string, n int) string { return service.Clip(s, n) }
