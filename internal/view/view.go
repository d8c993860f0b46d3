// Package view holds the one external view of each record hive keeps: a
// job, a PTY session. Every surface that shows a record shows this type:
// `hive inspect` and `hive ps --format json` (through the daemon's
// socket), every /api answer and event of the HTTP front end, and the
// job and session fields of MCP tool answers. So a field has one
// spelling and one encoding everywhere (docs/http-api.md lists them).
//
// Times are time.Time in UTC to the microsecond, encoded as RFC 3339
// ("2026-12-01T22:04:20.873929Z"); a record read back from the store has
// milliseconds (what the store keeps); a time not reached yet is left
// out. Durations are whole milliseconds, in fields that end
// in _ms.
//
// The MCP tools keep the seeds' names for three of a job's fields:
// job_id for id, status for state and runtime_ms for duration_ms (and
// session_id for a session's id); every other field they show is
// spelled and encoded as here.
package view

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hivetools/hive/internal/limits"
)

// Job is a job as every surface shows it. An answer may leave fields
// out (a list, an event); it never spells or encodes one differently.
type Job struct {
	ID        string   `json:"id"`
	Name      string   `json:"name,omitempty"`
	Cmd       string   `json:"cmd"`
	Argv      []string `json:"argv,omitempty"`
	ShellKind string   `json:"shell_kind,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	// Source is the surface that started the job: run, terminal, cli,
	// dashboard.
	Source string `json:"source,omitempty"`
	// State is pending, running, done, timed_out, killed, interrupted or
	// failed.
	State string `json:"state"`
	// ExitCode is null until the process exited; 128+n for a signal n,
	// as bash reports it.
	ExitCode *int `json:"exit_code"`
	Signal   *int `json:"signal,omitempty"`
	// SemanticStatus (ok, signal, error) and SemanticMessage say what the
	// exit code means for this command (docs/exit-codes.md); absent until
	// it exited.
	SemanticStatus  string `json:"semantic_status,omitempty"`
	SemanticMessage string `json:"semantic_message,omitempty"`
	// Error says why a job failed to start or was interrupted.
	Error      string    `json:"error,omitempty"`
	Pid        int       `json:"pid,omitempty"`
	Created    time.Time `json:"created"`
	Started    time.Time `json:"started,omitzero"`
	Ended      time.Time `json:"ended,omitzero"`
	DurationMs int64     `json:"duration_ms"`
	TimeoutMs  int64     `json:"timeout_ms,omitempty"`
	// StdoutPath and StderrPath are the streams' files, absent while a
	// stream is empty (its file is made at its first byte).
	StdoutPath    string `json:"stdout_path,omitempty"`
	StderrPath    string `json:"stderr_path,omitempty"`
	IndexPath     string `json:"index_path,omitempty"`
	StdoutBytes   int64  `json:"stdout_bytes"`
	StderrBytes   int64  `json:"stderr_bytes"`
	StdoutDropped int64  `json:"stdout_dropped,omitempty"`
	StderrDropped int64  `json:"stderr_dropped,omitempty"`
	// Leftover counts the processes still in the job's group (or its
	// cgroup, or carrying its marks) when its leader exited, all ended.
	Leftover int `json:"leftover_processes,omitempty"`
	// LooseEnd: the job raises a loose end for the agent.
	LooseEnd bool `json:"loose_end"`
	// Limits are the job's resource limits (absent: none), and
	// LimitsEnforcedBy how each is enforced once it started (cgroup,
	// cgroup-v1, rlimit, none; by field name). LimitHit names the limit that ended
	// or held back the job (memory_mb, pids, cpus; its semantic_message
	// says how).
	Limits           *limits.Limits    `json:"limits,omitempty"`
	LimitsEnforcedBy map[string]string `json:"limits_enforced_by,omitempty"`
	LimitHit         string            `json:"limit_hit,omitempty"`
	// Usage is what the job used: in all once it ended, so far (with its
	// memory now) while it runs, where the surface reads it. Absent:
	// unknown.
	Usage *limits.Usage `json:"usage,omitempty"`
	// CmdTruncated: Cmd is cut and Argv left out (a dashboard event only:
	// GET /api/jobs/{id} has the whole of them).
	CmdTruncated bool `json:"cmd_truncated,omitempty"`
}

// Session is a PTY session as every surface shows it.
type Session struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	Cmd  string `json:"cmd"`
	Pid  int    `json:"pid,omitempty"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
	SessionState
	Started time.Time `json:"started,omitzero"`
	// Bytes counts the session's output so far.
	Bytes int64 `json:"bytes"`
	// LimitsEnforcedBy says how each of the session's resource limits is
	// enforced (rlimit or none, by field name, as a job's); absent when
	// it has none, or was opened by an earlier daemon.
	LimitsEnforcedBy map[string]string `json:"limits_enforced_by,omitempty"`
}

// SessionState is how a PTY session stands, as every answer about a
// session tells it (the session's view, the PTY tools' answers, the pty
// engine's own results).
type SessionState struct {
	// Running is false once the session's process exited; ExitCode is
	// then its status (128+n for a signal n), null before.
	Running  bool `json:"running"`
	ExitCode *int `json:"exit_code"`
}

// Todo is a loose-end todo as every surface shows it: a job's (subsystem
// "bash", key its id) or another program's.
type Todo struct {
	ID        int64     `json:"id"`
	Subsystem string    `json:"subsystem"`
	Key       string    `json:"key"`
	Summary   string    `json:"summary"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
}

// Reminder is a pending reminder as every surface shows it: Preview is
// the start of its message (Preview's rule), Size the whole message's
// bytes.
type Reminder struct {
	ID      int64     `json:"id"`
	Preview string    `json:"preview"`
	Size    int64     `json:"size"`
	Due     time.Time `json:"due"`
	Created time.Time `json:"created"`
}

// Message is an inbox message as every surface shows it. A list shows
// its Preview (Preview's rule) and Size; a message delivered or read
// whole has its Body instead.
type Message struct {
	ID      int64     `json:"id"`
	From    string    `json:"from"`
	At      time.Time `json:"at"`
	Size    int64     `json:"size"`
	Preview string    `json:"preview,omitempty"`
	Body    string    `json:"body,omitempty"`
	// InFlight: a harness took it (inbox_next) and has not acked it yet.
	InFlight bool `json:"in_flight,omitempty"`
}

// PreviewLen bounds a preview, in characters.
const PreviewLen = 120

// Preview is the start of a message as lists show it: its whitespace
// folded to single spaces, at most PreviewLen characters with "…" after
// a cut.
func Preview(body string) string {
	body = strings.Join(strings.Fields(body), " ")
	if utf8.RuneCountInString(body) <= PreviewLen {
		return body
	}
	r := []rune(body)
	return string(r[:PreviewLen-1]) + "…"
}

// Time is t as a view holds it: in UTC, to the microsecond; the zero
// time stays zero.
func Time(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}
