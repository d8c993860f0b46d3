package tools

import (
	"github.com/hivetools/hive/internal/view"
)

// meaning is what a job's end means (view.Job's semantic fields): every
// view of a job tells the same, terminal_exec's envelope,
// terminal_job_logs, run and status, the job's loose end.
type meaning struct {
	Status, Message string
	TimedOut        bool
}

func meaningOf(in view.Job) meaning {
	return meaning{Status: in.SemanticStatus, Message: in.SemanticMessage, TimedOut: in.State == "timed_out"}
}

// msg is Message as the envelope carries it: nil when empty.
func (m meaning) msg() *string {
	if m.Message == "" {
		return nil
	}
	s := m.Message
	return &s
}

// text renders the meaning after an exit code: "ok", "ok: No matches found".
func (m meaning) text() string {
	if m.Message == "" {
		return m.Status
	}
	return m.Status + ": " + m.Message
}

// nilIfEmpty is a warning as the envelope carries it: nil when empty.
func nilIfEmpty(w string) *string {
	if w != "" {
		return &w
	}
	return nil
}
