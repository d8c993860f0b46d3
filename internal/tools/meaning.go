package tools

import (
	"github.com/hivetools/hive/internal/service"
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

// warningOf is the warning of cmd run in dir (the built-in destructive
// warnings and the policy's warn rules: service.Service.Warning), nil when
// there is none.
func warningOf(d *service.Service, cmd, dir string) *string {
	if w := d.Warning(cmd, dir); w != "" {
		return &w
	}
	return nil
}
