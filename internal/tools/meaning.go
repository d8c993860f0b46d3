package tools

import (
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/shell"
)

// meaning is what a job's end means (job.Meaning): every view of a job
// tells the same, terminal_exec's envelope, terminal_job_logs, run and
// status, the job's loose end, and view.Job's semantic fields.
type meaning job.Meaning

func meaningOf(in job.Info) meaning { return meaning(in.Meaning()) }

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

// warningOf is the destructive-command warning of cmd (shell.Warning), nil
// when there is none.
func warningOf(cmd string) *string {
	if w := shell.Warning(cmd); w != "" {
		return &w
	}
	return nil
}
