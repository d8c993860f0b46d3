// Package job is hive's one supervisor: it starts, watches, stops and records
// every process hive runs. The background-task tools, the terminal tools and
// the operator CLI are all views of the jobs kept here.
//
// A job runs in its own process group. Stopping a job sends SIGINT (or
// SIGKILL with force) to the whole group and escalates to SIGKILL after a
// grace period. When the group leader exits the job ends; anything left in
// its group is terminated and counted. Exactly one goroutine waits on each
// child; everybody else waits on the job's Done channel.
package job

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
)

// State is a job's lifecycle state.
type State string

// The states. pending → running → done | timed_out | killed | interrupted | failed.
const (
	Pending     State = "pending"
	Running     State = "running"
	Done        State = "done"
	TimedOut    State = "timed_out"
	Killed      State = "killed"
	Interrupted State = "interrupted" // the daemon died or shut down under it
	Failed      State = "failed"      // could not start; Info.Error says why
)

// Terminal reports whether s is a final state.
func (s State) Terminal() bool {
	switch s {
	case Done, TimedOut, Killed, Interrupted, Failed:
		return true
	}
	return false
}

// ValidState reports whether s names a state.
func ValidState(s string) bool {
	switch State(s) {
	case Pending, Running, Done, TimedOut, Killed, Interrupted, Failed:
		return true
	}
	return false
}

// Errors returned by the Manager.
var (
	ErrNotFound = errdefs.New(errdefs.ErrNotFound, "no such job")
	ErrEnded    = errdefs.New(errdefs.ErrConflict, "job already ended")
	ErrNotEnded = errdefs.New(errdefs.ErrConflict, "only an ended job can be removed")
	ErrNameBusy = errdefs.New(errdefs.ErrConflict, "name in use by a pending or running job")
	ErrClosed   = errdefs.New(errdefs.ErrUnavailable, "job manager closed")
)

// CheckNUL returns an error naming field if s holds a NUL byte: no
// command line, argument, directory or environment entry can carry one
// (the kernel would cut it there), so it is refused rather than dropped.
func CheckNUL(field, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return errdefs.Newf(errdefs.ErrInvalid, "%s: contains a NUL byte (at byte %d), which no command can receive", field, i)
	}
	return nil
}

// checkSpecNUL applies CheckNUL to every string of a spec that reaches exec.
func checkSpecNUL(spec Spec) error {
	if err := CheckNUL("cmd", spec.Cmd); err != nil {
		return err
	}
	for i, a := range spec.Argv {
		if strings.IndexByte(a, 0) >= 0 { // the field's name made only for its error
			return CheckNUL(fmt.Sprintf("argv[%d]", i), a)
		}
	}
	if err := CheckNUL("cwd", spec.Dir); err != nil {
		return err
	}
	for _, kv := range spec.Env {
		if strings.IndexByte(kv, 0) >= 0 {
			k, _, _ := strings.Cut(kv, "=")
			return CheckNUL(fmt.Sprintf("env %q", strings.ReplaceAll(k, "\x00", `\0`)), kv)
		}
	}
	return nil
}

// Spec describes a job to start.
type Spec struct {
	// Cmd is the command as the caller wrote it. With Argv empty it runs as
	// `bash -c Cmd`.
	Cmd string
	// Argv, if non-empty, is executed as it is (Argv[0] looked up in PATH).
	Argv []string
	// ShellFallback says Argv is Cmd planned to run directly (it has no
	// shell syntax): if Argv[0] is not found, Cmd runs under the shell
	// instead, whose "command not found" (exit 127) the caller then gets,
	// as it would have without the plan.
	ShellFallback bool
	// ShellKind records the interpreter: "bash", "direct", "powershell", "cmd".
	// If empty it is "bash" for Cmd and "direct" for Argv.
	ShellKind string
	// Dir is the working directory. If empty, the daemon's.
	Dir string
	// Env is the whole environment. If nil, the daemon's.
	Env []string
	// Stdin is fed to the process; nil means /dev/null.
	Stdin []byte
	// Timeout stops the job (as timed_out) after this long; zero means none.
	Timeout time.Duration
	// KillOnTimeout makes the timeout SIGKILL the group at once instead of
	// SIGINT with a grace period.
	KillOnTimeout bool
	// Name, if set, is the job's id. It must match [a-z0-9-]{1,63} and not
	// belong to a pending or running job.
	Name string
	// Source says which surface started the job ("run", "terminal", "cli").
	Source string
	// Quiet keeps the job from raising a loose end (Options.Todo): it is
	// recorded and listed like any job. The CLI's jobs are quiet unless
	// started with --notify.
	Quiet bool
	// Attached means a caller is waiting inline for the result: no loose
	// end is raised until Detach is called. Unattached jobs are detached
	// from the start.
	Attached bool
	// Limits are the limits the request asks; a zero field takes the
	// operator's default (Options.Limits). A field above the operator's
	// ceiling makes Start fail.
	Limits limits.Limits
}

// Info is a snapshot of a job.
type Info struct {
	ID            string
	Name          string
	Cmd           string
	Argv          []string
	ShellKind     string
	Cwd           string
	Source        string
	State         State
	ExitCode      *int // set once the process exited
	Signal        *int // the signal that ended the process, if any
	Error         string
	Timeout       time.Duration
	Created       time.Time
	Started       time.Time
	Ended         time.Time
	Pid           int
	PidStart      uint64
	StdoutPath    string
	StderrPath    string
	StdoutBytes   int64
	StderrBytes   int64
	StdoutDropped int64
	StderrDropped int64
	Leftover      int  // processes still in the group when the leader exited (then terminated)
	Quiet         bool // raises no loose end (Spec.Quiet)
	KillOnTimeout bool // the timeout SIGKILLs at once (Spec.KillOnTimeout)
	// Limits are the job's resource limits (its request's, the
	// operator's defaults and ceilings applied); LimitsBy how each is
	// enforced, once it started (nil: none enforced, e.g. by a holder
	// of an older build).
	Limits   limits.Limits
	LimitsBy limits.Enforced
	// Usage is what the job used (see limits.Usage): set once it ended;
	// a running job's so far is LiveUsage's. nil: unknown.
	Usage *limits.Usage
	// LimitHit is the limit that ended or held back the job (a field
	// name of limits, see limits.Hit), "" for none.
	LimitHit string
}

// IndexPath is the file of the job's interleave index (see
// output.Interleave), next to its stdout file: <id>.idx.
func (i Info) IndexPath() string {
	if i.StdoutPath == "" {
		return ""
	}
	return strings.TrimSuffix(i.StdoutPath, ".out") + ".idx"
}

// Duration is the run time so far (running) or in all (ended).
func (i Info) Duration() time.Duration {
	switch {
	case i.Started.IsZero():
		return 0
	case i.Ended.IsZero():
		return time.Since(i.Started)
	default:
		return i.Ended.Sub(i.Started)
	}
}

// Job is a job started by this daemon. Its methods are safe for concurrent use.
type Job struct {
	m *Manager

	// mu guards the job's state. It is never held across a call that
	// can block: the start of the process (an exec, or the holder's
	// spawn), a stop sent to the holder, a store commit. Whoever takes
	// it with the manager's lock takes that one first.
	mu       sync.Mutex
	info     Info
	spec     Spec // not changed once the job is in its manager's map (read without mu)
	detached bool
	reason   State // requested end state (killed, timed_out, interrupted); "" = none
	// stopForce and stopGrace are the stop asked (reason): applied if
	// its process starts all the same (a stop that came while its start
	// was in flight), and told to a holder that keeps the job only from
	// then on (keepLate).
	stopForce bool
	stopGrace time.Duration
	// starting is set while the job's process is being started without
	// mu (see begin); the job is pending meanwhile. inline: Start waits
	// for that start (it is not a queued job's), and returns startErr,
	// the holder's not answering, as its error instead of the job.
	starting bool
	inline   bool
	startErr error
	// givenUp is set when the holder did not answer the job's spawn:
	// it may start it late (its client then stops it).
	givenUp  bool
	timeoutT *time.Timer
	// child is the job's process while this daemon is its parent (no
	// Holder); held is set once a Holder runs it (heldEnd then hears
	// how it ended).
	child *child
	held  bool
	kept  bool // child, kept by the holder too (beginKept)
	// keepAtEnd is the keep of a child whose leader had exited when the
	// fork returned, or whose keep was put off while it runs (an attached
	// job's: keepLate), to be told with its end (Keeper.KeepEnded) unless
	// made before: until then it is the daemon's own.
	keepAtEnd *keepAtEnd
	keptAtEnd bool // kept so: its keep went with its end
	// keepMu is held by a keep that was put off (keepLate) while it is
	// made, and taken once the leader is reaped (keepSettled); keepOver
	// (under mu too) is set then: no such keep is made from then on.
	keepMu   sync.Mutex
	keepOver bool
	heldEnd  chan wire.JobEnd
	cgroup   string // a held job's cgroup in its holder (wire.JobStart.Cgroup)
	// runSeq is a held job's running record (its seq); endKept is set
	// once it ended with its holder keeping the end until the ack (see
	// Durable). Under mu.
	runSeq  uint64
	endKept bool
	// journaled is the sequence number of the job's record that is in
	// the manager's journal (journalLocked), 0 if none: while it is the
	// job's latest, the record is as good as committed (Sync, Durable).
	journaled atomic.Uint64
	// recordKept: the holder keeps the job's running record with it (a
	// kept job, wire.Kept.Record): a next daemon finds it there, so an
	// ended job's end may be told before either record is committed.
	recordKept bool
	// follow are a held job's streams, for its holder's events: read
	// without j.mu, so the events of a job never wait for its lock (set
	// before its spawn, whose events may come before its answer is
	// taken).
	follow atomic.Pointer[[2]*output.Stream]
	// reaped is set once the leader has been waited for: from then on its
	// pid may name another process. pidStart is the leader's start time
	// once read (see fillPidStart). Both are read by the record
	// writer without j.mu.
	reaped   atomic.Bool
	pidStart atomic.Uint64
	// seq is the sequence number of the job's latest record put: Sync
	// waits for it.
	seq atomic.Uint64

	stdout, stderr *output.Stream
	index          *output.Interleave // nil if it could not be made
	done           chan struct{}
	started        chan struct{} // closed once the streams exist or the job ended
	startedOnce    sync.Once
}

func (j *Job) markStarted() { j.startedOnce.Do(func() { close(j.started) }) }

// Started is closed once the job's output streams exist (it started or
// failed to start) or the job ended without starting.
func (j *Job) Started() <-chan struct{} { return j.started }

// ID is the job's id.
func (j *Job) ID() string { return j.info.ID }

// Created is when the job was created (its record keeps milliseconds).
func (j *Job) Created() time.Time { return j.info.Created.Truncate(time.Millisecond) }

// Info returns a snapshot, with live byte counts for a running job.
func (j *Job) Info() Info {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.snapshotLocked()
}

func (j *Job) snapshotLocked() Info {
	in := j.info
	if in.PidStart == 0 {
		in.PidStart = j.pidStart.Load()
	}
	if !in.State.Terminal() {
		if j.stdout != nil {
			st := j.stdout.Stats()
			in.StdoutBytes, in.StdoutDropped = st.Total, st.Dropped
		}
		if j.stderr != nil {
			st := j.stderr.Stats()
			in.StderrBytes, in.StderrDropped = st.Total, st.Dropped
		}
	}
	return in
}

// Done is closed when the job reaches a terminal state.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait waits until the job ends or ctx is done, and returns the latest
// snapshot and whether the job has ended.
func (j *Job) Wait(ctx context.Context) (Info, bool) {
	select {
	case <-j.done:
		return j.Info(), true
	case <-ctx.Done():
		in := j.Info()
		return in, in.State.Terminal()
	}
}

// Stdout and Stderr are the job's output streams (nil for a job that failed
// before its streams were created).
func (j *Job) Stdout() *output.Stream {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stdout
}

// Index is the arrival order of the job's two streams (nil before they
// exist, or if it could not be made).
func (j *Job) Index() *output.Interleave {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.index
}

// Stderr is the job's standard error stream.
func (j *Job) Stderr() *output.Stream {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stderr
}

// Detach hands an attached job over to the loose-end machinery: from now
// on its progress is recorded with its loose end (Options.Todo). It
// returns ErrEnded, and changes nothing, if the job has already ended:
// the caller then has the result and should deliver it inline. It returns
// once the handover is committed (the caller hands out the job's id
// next); if that fails, the job is killed and the error wraps
// ErrNotRecorded.
func (j *Job) Detach() error {
	j.keepLate() // told as running from now on: its holder has it first
	j.mu.Lock()
	if j.info.State.Terminal() {
		j.mu.Unlock()
		return ErrEnded
	}
	if !j.detached {
		j.detached = true
		if j.info.PidStart == 0 && j.pidStart.Load() == 0 && j.info.Pid != 0 && !j.reaped.Load() {
			// The start time counts only if the leader was still unreaped
			// after the read, so the pid was still its own.
			if st := procStartTime(j.info.Pid); st != 0 && !j.reaped.Load() {
				j.info.PidStart = st
			}
		}
		j.m.putLocked(j)
	}
	j.mu.Unlock()
	if err := j.m.Sync(j); err != nil {
		j.stop(Killed, true)
		return fmt.Errorf("job %s: its handover to the background could not be recorded, so it was killed: %w", j.info.ID, err)
	}
	return nil
}
