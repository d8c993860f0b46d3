package tools

import (
	"fmt"

	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/shell"
)

// meaning is what a job's end means. Every view of a job tells the same:
// terminal_exec's envelope, terminal_job_logs, run and status, and the
// job's loose end.
type meaning struct {
	Status   string // shell.StatusOK, StatusSignal or StatusError; "" while the job has not ended
	Message  string // a short explanation; "" when there is nothing to say
	TimedOut bool
}

// meaningOf reads the end of a job: its exit status judged for its command
// (shell.Semantic: grep's exit 1 is ok, "No matches found"), or why it
// has no exit status to judge (it could not start, timed out, was
// stopped, or the daemon stopped under it).
func meaningOf(in job.Info) meaning {
	if !in.State.Terminal() {
		return meaning{}
	}
	var m meaning
	if in.ExitCode != nil {
		st := shell.Semantic(in.Cmd, *in.ExitCode)
		m = meaning{Status: st.Kind, Message: st.Message}
	}
	switch in.State {
	case job.Failed:
		m = meaning{Status: shell.StatusError, Message: "Could not start: " + in.Error}
	case job.TimedOut:
		m = meaning{Status: shell.StatusError, Message: fmt.Sprintf("Timed out after %s; its process group was stopped", in.Timeout), TimedOut: true}
	case job.Killed:
		msg := "Stopped on request"
		if m.Status == shell.StatusSignal && m.Message != "" {
			msg += ": " + m.Message
		}
		m = meaning{Status: shell.StatusSignal, Message: msg}
	case job.Interrupted:
		msg := "Interrupted: the daemon stopped"
		if in.Error != "" {
			msg = "Interrupted: " + in.Error
		}
		m = meaning{Status: shell.StatusError, Message: msg}
	default:
		if in.ExitCode == nil {
			m = meaning{Status: shell.StatusError, Message: in.Error}
		}
	}
	return m
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

// warningOf is the destructive-command warning of cmd (shell.Warning), nil
// when there is none.
func warningOf(cmd string) *string {
	if w := shell.Warning(cmd); w != "" {
		return &w
	}
	return nil
}
