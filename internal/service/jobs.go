package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/shell"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/view"
)

// A job's loose end, the whole policy in one place:
//   - raised: a job that is not Quiet raises a todo (subsystem
//     TodoSubsystem, key its id) once it is detached: at its start for a
//     background job, when a waiting caller gives up for an attached one
//     (job.Job.Detach). The job engine writes it with the job's record, in
//     one transaction (job.Options.Todo = JobTodo);
//   - worded: JobTodo, "running" while it runs, its end (exit, meaning,
//     duration, where the output is) once ended;
//   - pushed: the inbox publishes each committed change to the MCP
//     sessions (internal/tools' channel); only an end is news that wakes
//     a harness (JobNews);
//   - cleared: when a caller has seen the end (EndSeen: an inline wait,
//     status, terminal_job_logs), when the job is removed (RemoveJob), or
//     by the agent (mark_todos_done, cancel_loose_end).

// TodoSubsystem is the subsystem of the todos jobs raise.
const TodoSubsystem = "bash"

// JobTodo is a job's loose end as its record is written.
func JobTodo(in job.Info) store.Todo {
	return store.Todo{Subsystem: TodoSubsystem, Key: in.ID, Summary: TodoSummary(in), News: JobNews(in)}
}

// JobNews reports whether a change of a job's todo is news to wake a
// harness for: its end is; its start (pending, running) is not, the
// agent started it.
func JobNews(in job.Info) bool { return in.State.Terminal() }

// EndSeen tells that a caller has the end of the job in: its loose end is
// done. A job that has not ended keeps it.
func (s *Service) EndSeen(ctx context.Context, in job.Info) {
	if !in.State.Terminal() {
		return
	}
	if err := s.Inbox.ClearKey(ctx, TodoSubsystem, in.ID); err != nil {
		s.Logger.Warn("a job's loose end could not be cleared", "job", in.ID, "err", err)
	}
}

// TodoSummary is the loose-end text of a job.
func TodoSummary(in job.Info) string {
	label := in.ID
	if in.Name != "" {
		label += " (" + in.Name + ")"
	}
	switch in.State {
	case job.Pending:
		return fmt.Sprintf("task %s pending (queued): %s", label, Clip(in.Cmd, 120))
	case job.Running:
		return fmt.Sprintf("task %s running: %s", label, Clip(in.Cmd, 120))
	}
	s := fmt.Sprintf("task %s %s", label, in.State)
	if in.ExitCode != nil {
		s += fmt.Sprintf(", exit %d", *in.ExitCode)
	}
	m := in.Meaning()
	s += " (" + m.Status
	if m.Message != "" {
		s += ": " + m.Message
	}
	s += ")"
	if !in.Started.IsZero() {
		s += fmt.Sprintf(" after %s", in.Duration().Round(time.Millisecond))
	}
	s += ": " + Clip(in.Cmd, 120)
	if in.Error != "" && !strings.Contains(m.Message, in.Error) {
		s += " (" + in.Error + ")"
	}
	s += "; " + outputSummary(in)
	if w := shell.Warning(in.Cmd); w != "" {
		s += "; warning: " + w
	}
	if d := in.StdoutDropped + in.StderrDropped; d > 0 {
		s += fmt.Sprintf("; %d B past the file cap dropped", d)
	}
	if in.Leftover > 0 {
		s += fmt.Sprintf("; %d leftover process(es) terminated", in.Leftover)
	}
	return s
}

// outputSummary tells where a job's output is: each stream's file and
// size, or that it is empty (an empty stream has no file).
func outputSummary(in job.Info) string {
	part := func(name, path string, n int64) string {
		if n == 0 {
			return name + " empty"
		}
		return fmt.Sprintf("%s %s (%d B)", name, path, n)
	}
	if in.StdoutBytes == 0 && in.StderrBytes == 0 {
		return "no output"
	}
	return "output: " + part("stdout", in.StdoutPath, in.StdoutBytes) + ", " + part("stderr", in.StderrPath, in.StderrBytes)
}

// Clip is s on one line, cut to n bytes with "…" after a cut.
func Clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// StartJob is the one path that starts a job, for every surface: the
// spec's rules (job.Manager.Start: cmd, timeout, NUL bytes, the name
// rule), an id, the queue, the start. Errors are of class
// errdefs.ErrInvalid for a spec that breaks a rule, ErrConflict for a
// name in use, ErrUnavailable when the engine is closed. A command that
// cannot be started is a job in state failed, not an error. The job is
// not yet durable: see Recorded.
func (s *Service) StartJob(spec job.Spec) (*job.Job, error) {
	return s.Jobs.Start(spec)
}

// Recorded waits until j's latest record is committed (so its id may be
// handed out) and returns its view.
func (s *Service) Recorded(j *job.Job) (view.Job, error) {
	in, err := s.Jobs.Durable(j)
	if err != nil {
		return view.Job{}, err
	}
	return in.View(), nil
}

// RunJob starts a job in the background (StartJob) and returns its view
// once its record is committed.
func (s *Service) RunJob(spec job.Spec) (view.Job, error) {
	j, err := s.StartJob(spec)
	if err != nil {
		return view.Job{}, err
	}
	return s.Recorded(j)
}

// Job is the view of the job ref names (an id, or a name: the newest job
// that has it). An unknown one is job.ErrNotFound.
func (s *Service) Job(ctx context.Context, ref string) (view.Job, error) {
	in, err := s.Jobs.Lookup(ctx, ref)
	if err != nil {
		return view.Job{}, err
	}
	return in.View(), nil
}

// KillJob stops the job ref names: SIGINT to its group (SIGKILL with
// force), SIGKILL after the grace; a pending job is cancelled. It does
// not wait for the end. A job that had ended already gives its view and
// an error wrapping job.ErrEnded.
func (s *Service) KillJob(ref string, force bool) (view.Job, error) {
	in, err := s.Jobs.Kill(ref, force)
	if err != nil && !errors.Is(err, job.ErrEnded) {
		return view.Job{}, err
	}
	return in.View(), err
}

// RemoveJob removes an ended job: its record, its files and its loose
// end. A job that has not ended is refused (job.ErrNotEnded).
func (s *Service) RemoveJob(ctx context.Context, ref string) (view.Job, error) {
	in, err := s.Jobs.Remove(ctx, ref)
	if err != nil {
		return view.Job{}, err
	}
	s.EndSeen(ctx, in)
	return in.View(), nil
}

// RerunJob starts a new job with the command, directory and timeout of
// the job ref names (the daemon's environment), from source, and returns
// the new job's view once it is recorded.
func (s *Service) RerunJob(ctx context.Context, ref, source string) (view.Job, error) {
	in, err := s.Jobs.Lookup(ctx, ref)
	if err != nil {
		return view.Job{}, err
	}
	return s.RunJob(job.Spec{Cmd: in.Cmd, Argv: in.Argv, ShellKind: in.ShellKind, Dir: in.Cwd,
		Timeout: in.Timeout, Source: source})
}
