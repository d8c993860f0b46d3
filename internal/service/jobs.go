package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/job"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
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
func (s *Service) EndSeen(ctx context.Context, in view.Job) {
	if !JobEnded(in) {
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

// Errors of the jobs, for errors.Is (each of an errdefs class).
var (
	// ErrJobNotFound: no job has that id or name (errdefs.ErrNotFound).
	ErrJobNotFound = job.ErrNotFound
	// ErrJobEnded: the job had ended already (errdefs.ErrConflict).
	ErrJobEnded = job.ErrEnded
)

// JobSpec is a job to start: the engine's Spec (job.Spec), named here so
// that a surface needs no engine import to build one.
type JobSpec = job.Spec

// CheckNUL returns an error of class errdefs.ErrInvalid naming field if
// s holds a NUL byte, which no command, argument, directory or
// environment entry can carry.
func CheckNUL(field, s string) error { return job.CheckNUL(field, s) }

// ValidJobState reports whether s names a job's state (pending, running,
// done, timed_out, killed, interrupted, failed).
func ValidJobState(s string) bool { return job.ValidState(s) }

// JobEnded reports whether a job in view v has ended (its state is one
// of the terminal ones).
func JobEnded(v view.Job) bool { return job.State(v.State).Terminal() }

// LiveJob is a job this daemon holds: one it started, or one it keeps
// through the holder. Its methods are safe for concurrent use.
type LiveJob struct {
	j *job.Job
	// warning is the command's warning as the policy's check at the start
	// found it, when checked.
	warning string
	checked bool
}

// Warning is the warning of the job's command (Service.Warning), as
// found when it started if the policy was checked then.
func (l *LiveJob) Warning(s *Service) string {
	if l.checked {
		return l.warning
	}
	in := l.j.Info()
	return s.Warning(in.Cmd, in.Cwd)
}

// ID is the job's id.
func (l *LiveJob) ID() string { return l.j.ID() }

// Started is closed once the job's process started (or failed to).
func (l *LiveJob) Started() <-chan struct{} { return l.j.Started() }

// Done is closed once the job has ended and its end is recorded in
// memory.
func (l *LiveJob) Done() <-chan struct{} { return l.j.Done() }

// Wait waits until the job ends or ctx ends, and reports whether it
// ended.
func (l *LiveJob) Wait(ctx context.Context) (ended bool) {
	_, ended = l.j.Wait(ctx)
	return ended
}

// Detach tells that the caller waiting for an attached job gives up: the
// job raises its loose end from now on. A job that has ended already is
// ErrJobEnded (and changes nothing).
func (l *LiveJob) Detach() error { return l.j.Detach() }

// Stdout, Stderr and Index are the job's live streams and their order;
// nil for a job with none here (one that failed to start; a held job has
// no Index).
func (l *LiveJob) Stdout() *output.Stream    { return l.j.Stdout() }
func (l *LiveJob) Stderr() *output.Stream    { return l.j.Stderr() }
func (l *LiveJob) Index() *output.Interleave { return l.j.Index() }

// LiveUsage is the usage so far of job id, running in this daemon (see
// job.Job.LiveUsage); nil if it is not, or has no cgroup to read it from.
func (s *Service) LiveUsage(id string) *limits.Usage {
	j, err := s.Jobs.Get(id)
	if err != nil {
		return nil
	}
	return j.LiveUsage()
}

// WithLiveUsage is v with its usage so far when it is running here (see
// LiveUsage).
func (s *Service) WithLiveUsage(v view.Job) view.Job {
	if v.State == string(job.Running) {
		if u := s.LiveUsage(v.ID); u != nil {
			v.Usage = u
		}
	}
	return v
}

// LiveJob is the job id if this daemon holds it (a job of an earlier
// daemon, or one that ended and left memory, is only a record: Job);
// else an error wrapping ErrJobNotFound. id is an id, not a name.
func (s *Service) LiveJob(id string) (*LiveJob, error) {
	j, err := s.Jobs.Get(id)
	if err != nil {
		return nil, err
	}
	return &LiveJob{j: j}, nil
}

// StartJob is the one path that starts a job, for every surface: the
// spec's rules (job.Manager.Start: cmd, timeout, NUL bytes, the name
// rule), an id, the queue, the start. Errors are of class
// errdefs.ErrInvalid for a spec that breaks a rule, ErrConflict for a
// name in use, ErrUnavailable when the engine is closed, ErrPolicy for a
// command the policy refuses (nothing is spawned). A command that
// cannot be started is a job in state failed, not an error. The job is
// not yet durable: see Recorded.
func (s *Service) StartJob(spec JobSpec) (*LiveJob, error) {
	warning, checked, err := s.checkJob(spec)
	if err != nil {
		return nil, err
	}
	j, err := s.Jobs.Start(spec)
	if err != nil {
		return nil, err
	}
	return &LiveJob{j: j, warning: warning, checked: checked}, nil
}

// Recorded waits until l's latest record is committed (so its id may be
// handed out) and returns its view.
func (s *Service) Recorded(l *LiveJob) (view.Job, error) {
	in, err := s.Jobs.Durable(l.j)
	if err != nil {
		return view.Job{}, err
	}
	return in.View(), nil
}

// RunJob starts a job in the background (StartJob) and returns its view
// once its record is committed.
func (s *Service) RunJob(spec JobSpec) (view.Job, error) {
	j, err := s.StartJob(spec)
	if err != nil {
		return view.Job{}, err
	}
	return s.Recorded(j)
}

// WaitJob is the view of the job ref names (Job), once it has ended if
// this daemon holds it and it ends within wait (or before ctx ends);
// else as it stands then. A job only on record is not waited for.
func (s *Service) WaitJob(ctx context.Context, ref string, wait time.Duration) (view.Job, error) {
	in, err := s.Jobs.Lookup(ctx, ref)
	if err != nil {
		return view.Job{}, err
	}
	if in.State.Terminal() || wait <= 0 {
		return in.View(), nil
	}
	j, err := s.Jobs.Get(in.ID) // the job looked up, not a newer one of that name
	if err != nil {
		return in.View(), nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	j.Wait(wctx)
	cancel()
	return s.Recorded(&LiveJob{j: j})
}

// JobQuery selects a page of jobs, newest first.
type JobQuery struct {
	// States, if non-empty, keeps the jobs in those states.
	States []string
	// Status, if set, keeps the ended jobs of that meaning (view.Job's
	// semantic_status, job.Info.Meaning): JobStatusOK, the jobs that
	// succeeded (grep's exit 1 too); JobStatusError, every job that did
	// not (an error exit, a timeout, a stop or signal, an interruption, a
	// command that could not start).
	Status string
	// Name, if set, keeps the jobs of that name.
	Name string
	// Text, if set, keeps the jobs whose id, name or command contains it
	// (ASCII case-insensitively).
	Text string
	// Limit bounds the page; <= 0: no limit.
	Limit int
	// BeforeCreated and BeforeID, when BeforeCreated is not zero, start
	// the page after the job of that creation time and id (the last of
	// the previous page): a cursor that stays right while new jobs start.
	BeforeCreated time.Time
	BeforeID      string
}

// Values of JobQuery.Status.
const (
	JobStatusOK    = "ok"
	JobStatusError = "error"
)

// ValidJobStatus reports whether s is a JobQuery.Status: ok or error.
func ValidJobStatus(s string) bool { return s == JobStatusOK || s == JobStatusError }

// checkStates is states as the engine takes them; one that is not a
// state is errdefs.ErrInvalid.
func checkStates(states []string) ([]job.State, error) {
	var out []job.State
	for _, st := range states {
		if !job.ValidState(st) {
			return nil, errdefs.Newf(errdefs.ErrInvalid, "states: %q: not a job state", st)
		}
		out = append(out, job.State(st))
	}
	return out, nil
}

// views is the view of each of infos; never nil.
func views(infos []job.Info) []view.Job {
	out := make([]view.Job, 0, len(infos))
	for _, in := range infos {
		out = append(out, in.View())
	}
	return out
}

// statusOf is a job's JobQuery.Status: "" while it has not ended.
func statusOf(in job.Info) string {
	switch m := in.Meaning(); m.Status {
	case "":
		return ""
	case shell.StatusOK:
		return JobStatusOK
	}
	return JobStatusError
}

// JobPage is the page of jobs q selects: those this daemon holds as they
// stand now, the others as recorded; never nil. A state or status that
// is none is errdefs.ErrInvalid.
func (s *Service) JobPage(ctx context.Context, q JobQuery) ([]view.Job, error) {
	if _, err := checkStates(q.States); err != nil {
		return nil, err
	}
	sq := store.JobQuery{States: q.States, Name: q.Name, Text: q.Text, Limit: q.Limit,
		BeforeCreated: q.BeforeCreated, BeforeID: q.BeforeID}
	switch q.Status {
	case "":
		infos, err := s.Jobs.Page(ctx, sq)
		if err != nil {
			return nil, err
		}
		return views(infos), nil
	case JobStatusOK:
		// Only a job that ended done can have succeeded.
		if len(q.States) > 0 && !slices.Contains(q.States, string(job.Done)) {
			return []view.Job{}, nil
		}
		sq.States = []string{string(job.Done)}
	case JobStatusError:
		sq.NotZero = true
	default:
		return nil, errdefs.Newf(errdefs.ErrInvalid, "status %q: must be ok or error", q.Status)
	}
	// The store keeps the jobs that may have that status; their meaning
	// (judged by their command) decides, batch by batch until the page is
	// full.
	if q.Limit > 0 {
		sq.Limit = max(2*q.Limit, 64)
	}
	out := []view.Job{}
	for {
		infos, err := s.Jobs.Page(ctx, sq)
		if err != nil {
			return nil, err
		}
		for _, in := range infos {
			if statusOf(in) != q.Status {
				continue
			}
			out = append(out, in.View())
			if len(out) == q.Limit {
				return out, nil
			}
		}
		if sq.Limit <= 0 || len(infos) < sq.Limit {
			return out, nil
		}
		last := infos[len(infos)-1]
		sq.BeforeCreated, sq.BeforeID = last.Created, last.ID
	}
}

// ListJobs lists the newest jobs, at most limit (<= 0: all), of the name
// ("": any) and in the states (none: any), those this daemon holds as
// they stand now; never nil. A state that is not one is
// errdefs.ErrInvalid.
func (s *Service) ListJobs(ctx context.Context, limit int, name string, states ...string) ([]view.Job, error) {
	ss, err := checkStates(states)
	if err != nil {
		return nil, err
	}
	infos, err := s.Jobs.ListNamed(ctx, limit, name, ss...)
	if err != nil {
		return nil, err
	}
	return views(infos), nil
}

// RecentJobs are the jobs held in memory (running ones and the latest
// ended), as they stand now.
func (s *Service) RecentJobs() []view.Job { return views(s.Jobs.Recent()) }

// JobEnd is the view of the job ref names and the wording of its loose
// end, once it has ended; ok is false while it runs, or when there is no
// such job.
func (s *Service) JobEnd(ctx context.Context, ref string) (v view.Job, summary string, ok bool) {
	if s.Jobs == nil {
		return view.Job{}, "", false
	}
	in, err := s.Jobs.Lookup(ctx, ref)
	if err != nil || !in.State.Terminal() {
		return view.Job{}, "", false
	}
	return in.View(), TodoSummary(in), true
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
	s.EndSeen(ctx, in.View())
	return in.View(), nil
}

// RerunJob starts a new job with the command, directory, timeout and
// name of the job ref names (the daemon's environment), from source, and
// returns the new job's view once it is recorded. A name is one job's at
// a time: while the job (or a newer one of its name) runs, running it
// again is refused, errdefs.ErrConflict, saying so.
func (s *Service) RerunJob(ctx context.Context, ref, source string) (view.Job, error) {
	in, err := s.Jobs.Lookup(ctx, ref)
	if err != nil {
		return view.Job{}, err
	}
	if in.Name != "" && !in.State.Terminal() {
		return view.Job{}, errdefs.Newf(errdefs.ErrConflict, "job %s (%s) is still %s: run again keeps its name, which one job has at a time; stop it first, or wait for its end", in.ID, in.Name, in.State)
	}
	v, err := s.RunJob(JobSpec{Cmd: in.Cmd, Argv: in.Argv, ShellKind: in.ShellKind, Dir: in.Cwd,
		Timeout: in.Timeout, Source: source, Name: in.Name})
	if errors.Is(err, job.ErrNameBusy) {
		return view.Job{}, fmt.Errorf("run job %s again as %q: a newer job of that name is running: %w", in.ID, in.Name, err)
	}
	return v, err
}
