package job

import (
	"fmt"
	"strings"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/shell"
	"github.com/hivetools/hive/internal/view"
)

// View is the job as every surface shows it (package view): the one
// mapping from a job's record to its external form.
func (i Info) View() view.Job {
	v := view.Job{
		ID: i.ID, Name: i.Name, Cmd: i.Cmd, Argv: i.Argv, ShellKind: i.ShellKind, Cwd: i.Cwd, Source: i.Source,
		State: string(i.State), ExitCode: i.ExitCode, Signal: i.Signal, Error: i.Error, Pid: i.Pid,
		Created: view.Time(i.Created), Started: view.Time(i.Started), Ended: view.Time(i.Ended),
		DurationMs: i.Duration().Milliseconds(), TimeoutMs: i.Timeout.Milliseconds(),
		StdoutPath: StreamPath(i.StdoutPath, i.StdoutBytes), StderrPath: StreamPath(i.StderrPath, i.StderrBytes),
		IndexPath: i.IndexPath(), StdoutBytes: i.StdoutBytes, StderrBytes: i.StderrBytes,
		StdoutDropped: i.StdoutDropped, StderrDropped: i.StderrDropped, Leftover: i.Leftover, LooseEnd: !i.Quiet,
	}
	if !i.Limits.IsZero() {
		l := i.Limits
		v.Limits, v.LimitsEnforcedBy = &l, i.LimitsBy
	}
	v.Usage, v.LimitHit = i.Usage, i.LimitHit
	m := i.Meaning()
	v.SemanticStatus, v.SemanticMessage = m.Status, m.Message
	return v
}

// Meaning is what a job's end means; the zero Meaning while it has not
// ended.
type Meaning struct {
	Status   string // shell.StatusOK, StatusSignal or StatusError; "" while the job has not ended
	Message  string // a short explanation; "" when there is nothing to say
	TimedOut bool
}

// Meaning reads the end of a job: its exit status judged for its command
// (shell.Semantic: grep's exit 1 is ok, "No matches found"), or why it
// has no exit status to judge (it could not start, timed out, was
// stopped, or the daemon stopped under it). Every view of a job tells
// this one meaning.
func (i Info) Meaning() Meaning {
	if !i.State.Terminal() {
		return Meaning{}
	}
	var m Meaning
	if i.ExitCode != nil {
		st := shell.Semantic(i.Cmd, *i.ExitCode)
		m = Meaning{Status: st.Kind, Message: st.Message}
	}
	switch i.State {
	case Failed:
		m = Meaning{Status: shell.StatusError, Message: "Could not start: " + i.Error}
	case TimedOut:
		m = Meaning{Status: shell.StatusError, Message: fmt.Sprintf("Timed out after %s; %s was stopped", i.Timeout, stoppedWhat), TimedOut: true}
	case Killed:
		msg := "Stopped on request"
		if m.Status == shell.StatusSignal && m.Message != "" {
			msg += ": " + m.Message
		}
		m = Meaning{Status: shell.StatusSignal, Message: msg}
	case Interrupted:
		msg := "Interrupted: the daemon stopped"
		if i.Error != "" {
			msg = "Interrupted: " + i.Error
		}
		m = Meaning{Status: shell.StatusError, Message: msg}
	default:
		if i.ExitCode == nil {
			m = Meaning{Status: shell.StatusError, Message: i.Error}
		} else if i.Error != "" && !strings.Contains(m.Message, i.Error) {
			// It ran, but something went wrong on hive's side (an output
			// file the disk could not take): told next to the exit's meaning.
			if m.Message != "" {
				m.Message += "; "
			}
			m.Message += i.Error
		}
		// A limit that ended it or refused it something is what it
		// means, whatever its status: an OOM kill is no plain exit 137.
		if _, msg := limits.Hit(i.Limits, i.usage(), i.Signal != nil && *i.Signal == sigXCPU); i.LimitHit != "" && msg != "" {
			m = Meaning{Status: shell.StatusError, Message: upperFirst(msg)}
		}
	}
	return m
}

// usage is i.Usage, or none.
func (i Info) usage() limits.Usage {
	if i.Usage == nil {
		return limits.Usage{}
	}
	return *i.Usage
}

// upperFirst is s with its first letter upper case, as meanings start.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// StreamPath is the path to tell of a stream's file: none while the
// stream is empty, as its file is made at its first byte.
func StreamPath(path string, bytes int64) string {
	if bytes == 0 {
		return ""
	}
	return path
}
