package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hivetools/hive/internal/errdefs"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/supervise"
)

// A Holder runs jobs for a Manager in another process, which outlives the
// daemon: see internal/holder and docs/architecture.md. The Manager keeps
// records, loose ends and the streams' readers; the holder keeps the
// processes, their pipes and the bytes (it writes the stream files), and
// the ends that the daemon has not acknowledged.
//
// Its calls may block until the holder answers (or its client gives up:
// ErrHolderNotAnswering); the Manager makes them with none of its locks
// held.
type Holder interface {
	// Spawn starts a job's process. An error wrapping
	// ErrHolderNotAnswering means the holder was asked but gave no
	// answer in time: the Holder then sees to it that a process the
	// holder starts late is stopped.
	Spawn(wire.JobSpec) (wire.JobStart, error)
	// Stop signals a held job's group: SIGINT, SIGKILL after grace (the
	// first stop's); SIGKILL at once with force.
	Stop(id string, force bool, grace time.Duration) error
	// Ack tells the holder that the job's end is recorded: it forgets it.
	Ack(id string) error
	// Held lists what the holder holds: running jobs, and ended ones not
	// acknowledged.
	Held() ([]wire.Job, error)
}

// A Keeper is a Holder that keeps jobs the manager starts itself (the
// holder's protocol 3): the manager is their parent, pumps their output
// and waits for them as it does without a Holder, and the holder holds
// their pidfds and pipes, to take them over should the daemon go
// (docs/architecture.md, "the daemon forks, the holder keeps").
type Keeper interface {
	// Keeps reports whether the holder keeps such jobs now, and the mark
	// each carries (EnvHolder=<its instance>).
	Keeps() (ok bool, mark string)
	// Spare is a cgroup the holder lent for one (its path), if it makes
	// cgroups and has one at hand.
	Spare() (string, bool)
	// Unspare gives back a spare taken for a job that did not start: no
	// process is in it, the next job takes it.
	Unspare(string)
	// Keep gives the holder the job: duplicates of its leader's pidfd
	// and of its pipes' read ends go with it.
	Keep(k wire.Kept, pidfd, outR, errR int) error
	// KeepEnd tells the holder how a kept job ended, before the manager
	// tells its callers: the holder keeps the end until the ack (Ack), so
	// the end is told without waiting for its record (see Durable).
	KeepEnd(id string, e wire.JobEnd) error
	// KeepsEnded reports whether the holder keeps a job whose leader
	// ended before it was kept, with its end (KeepEnded).
	KeepsEnded() bool
	// KeepEnded gives the holder such a job once it ended: its keep (no
	// descriptors) and its end in one line, kept until the ack as a kept
	// job's end told with KeepEnd.
	KeepEnded(k wire.Kept, e wire.JobEnd) error
	// KeepStop tells the holder that the manager stops a kept job,
	// before it signals it: a holder that takes the job over goes on
	// with the stop.
	KeepStop(id string, force bool, grace time.Duration) error
	// Killed reports whether the cgroup the holder lent job id was
	// written cgroup.kill while the job ran (waiting up to wait for the
	// write to be seen): asked of a kept job killed by a SIGKILL hive
	// did not send.
	Killed(id string, wait time.Duration) (bool, error)
	// HolderGone reports whether the holder's process is gone: its guard
	// then ends the processes of the jobs it kept (their marks), and a
	// kept job that dies of a signal is interrupted, as a held one is.
	HolderGone() bool
}

// ErrHolderLost is the error of a held job whose holder died. A job's
// record names the holder's pid where it is known (holderLostError).
var ErrHolderLost = errdefs.New(errdefs.ErrUnavailable, "the holder of the jobs died")

// holderLostError is the error a job records when its holder died: it
// names the holder's pid, as the holder's guard does when the next
// daemon records it (the same words whichever saw the death first).
func (m *Manager) holderLostError() string {
	if h, ok := m.o.Holder.(interface{ HolderPid() int }); ok {
		if pid := h.HolderPid(); pid > 0 {
			return fmt.Sprintf("the holder of the jobs (pid %d) died", pid)
		}
	}
	return ErrHolderLost.Error()
}

// ErrHolderNotAnswering is wrapped by the error of a call to a Holder
// that gave no answer in time (holder.ErrNotAnswering is this error): a
// holder stopped (SIGSTOP) or stuck. A spawn that gets it fails the job,
// and Start returns it; should the holder start the job later all the
// same, the Holder stops it (it is no job of the manager's).
var ErrHolderNotAnswering = errdefs.New(errdefs.ErrUnavailable, "the holder of the jobs does not answer")

// --- the holder's half ---

// HeldProc is a job's process as a holder runs it.
type HeldProc struct {
	Spec           wire.JobSpec
	Start          wire.JobStart
	c              *child     // RunHeld's
	r              heldRunner // c, or a process taken over (TakeHeld)
	stdout, stderr *output.Stream
	index          *output.Interleave
	pidStart       atomic.Uint64
	reaped         atomic.Bool
	wrote          func()
}

// heldRunner pumps, waits for and stops a held job's process: a child
// the holder started (RunHeld), or a process it took over (TakeHeld).
type heldRunner interface {
	run(out, errw io.Writer) childEnd
	stop(force bool, grace time.Duration)
	goOnStopping(at time.Time, force bool, grace time.Duration)
	stopped() bool
}

// heldDevNull is the stdin of held jobs without one: opened once for the
// holder's life (nil if it cannot be: exec then opens it per job), as a
// manager does for its own jobs.
var heldDevNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
})

// RunHeld starts spec's process, its output pumped into the stream files
// by Wait; wrote is called (from the pumping goroutines) after each write
// to a stream. reaper, if set, is the holder's child subreaper; cgroups,
// if set, gives the job a cgroup of its own.
func RunHeld(spec wire.JobSpec, reaper *proc.Reaper, cgroups *proc.JobCgroups, logger *slog.Logger, wrote func()) (*HeldProc, error) {
	if spec.ID == "" || spec.Path == "" || len(spec.Argv) == 0 || spec.Stdout == "" || spec.Stderr == "" {
		return nil, errors.New("spawn: id, path, argv, stdout and stderr are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if spec.LeftoverGrace <= 0 {
		spec.LeftoverGrace = 2 * time.Second
	}
	h := &HeldProc{Spec: spec}
	noteStart()
	cmd, pipes, err := newCmd(spec.Path, spec.Argv, spec.Dir, spec.Env, spec.Stdin, heldDevNull(), nil)
	if err != nil {
		return nil, err
	}
	h.c = &child{id: spec.ID, owner: spec.Owner, reaper: reaper, cgroups: cgroups, leftover: spec.LeftoverGrace, logger: logger,
		cmd: cmd, pipes: pipes, pidStart: &h.pidStart, reaped: &h.reaped, timeout: spec.Timeout}
	if spec.Limits != nil {
		h.c.limits = *spec.Limits
	}
	if err := h.c.start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	h.r = h.c
	// What only the start needed goes: a job held for days keeps no copy
	// of its environment (2-3 KiB of strings a job, decoded anew for each
	// spawn), its argv or its path (issue 20: 30 KiB an idle job, daemon
	// and holder together).
	h.Spec.Env, h.Spec.Argv, h.Spec.Path = nil, nil, ""
	cmd.Env, cmd.Args = nil, nil
	// The files are made while the child already runs (its output waits
	// in the pipes), off the start's path, as a daemon's own jobs do: an
	// old file of the name goes, and a file that cannot be made leaves
	// the stream counting what it drops.
	h.openStreams(logger, nil)
	st := h.c.startTime()
	h.pidStart.Store(st)
	h.Start = wire.JobStart{Pid: h.c.pid, PidStart: st, Started: time.Now(), Cgroup: cgroups.SlotOf(spec.ID),
		LimitsBy: h.c.by}
	h.wrote = wrote
	return h, nil
}

// openStreams makes h's stream files and index (h.Spec's): anew, or,
// with at (a job taken over: TakeHeld), going on from where their last
// writer left them, at its counts. A file that cannot be made or opened
// leaves its stream counting what it drops; an index that cannot,
// none.
func (h *HeldProc) openStreams(logger *slog.Logger, at *[2]output.Stats) {
	spec := h.Spec
	so := &output.Options{FileCap: spec.FileCap, NoRing: true}
	for i, x := range []struct {
		dst  **output.Stream
		path string
	}{{&h.stdout, spec.Stdout}, {&h.stderr, spec.Stderr}} {
		var st *output.Stream
		var err error
		if at != nil {
			st, err = output.Continue(x.path, so, at[i])
		} else {
			st, err = output.Create(x.path, so)
		}
		if err != nil {
			logger.Warn("a held job's output file", "job", spec.ID, "err", err)
			st, _ = output.Create("", so)
		}
		*x.dst = st
	}
	if spec.Index == "" {
		return
	}
	var x *output.Interleave
	var err error
	if at != nil {
		x, err = output.ContinueInterleave(spec.Index, h.stdout, h.stderr, 0)
	} else {
		x, err = output.NewInterleave(spec.Index, h.stdout, h.stderr, 0)
	}
	if err != nil {
		logger.Warn("a held job's index", "job", spec.ID, "err", err)
		return
	}
	x.FlushEachMark() // the daemon reads it as it grows
	h.index = x
}

// Stop signals the job: see Holder.Stop.
func (h *HeldProc) Stop(force bool, grace time.Duration) { h.r.stop(force, grace) }

// GoOnStopping goes on with a stop that another process began at at (the
// daemon that started a job the holder took over, TakeHeld): SIGKILL
// once grace since at is over, at once if force; the group is not sent
// SIGINT again. Its end says Stopped.
func (h *HeldProc) GoOnStopping(at time.Time, force bool, grace time.Duration) {
	h.r.goOnStopping(at, force, grace)
}

// Counts are the streams' counters now.
func (h *HeldProc) Counts() (stdout, stderr wire.Counts) {
	return wire.CountsOf(h.stdout.Stats()), wire.CountsOf(h.stderr.Stats())
}

// Wait pumps the output until the job has ended and everything it left
// is gone, and returns its end. Call it once.
func (h *HeldProc) Wait() wire.JobEnd {
	var out, errw io.Writer = h.stdout, h.stderr
	if h.index != nil {
		out, errw = h.index.Writer(0), h.index.Writer(1)
	}
	if h.wrote != nil {
		out, errw = notifyWriter{out, h.wrote}, notifyWriter{errw, h.wrote}
	}
	e := h.r.run(out, errw)
	h.closeStreams()
	end := wire.JobEnd{ID: h.Spec.ID, Exited: e.exited, ExitCode: e.code, Signal: e.sig, Leftover: e.leftover,
		Stopped: h.r.stopped(), Ended: time.Now(), Usage: &e.usage, LimitHit: e.hit}
	if e.err != nil {
		end.Error = e.err.Error()
	}
	if e.note != "" {
		if end.Error != "" {
			end.Error += "; "
		}
		end.Error += e.note
	}
	for _, s := range []*output.Stream{h.stdout, h.stderr} {
		if err := s.Err(); err != nil {
			if end.Error != "" {
				end.Error += "; "
			}
			end.Error += err.Error()
		}
	}
	end.Stdout, end.Stderr = h.Counts()
	return end
}

func (h *HeldProc) closeStreams() {
	if h.index != nil {
		h.index.Close()
	}
	h.stdout.Close()
	h.stderr.Close()
}

// notifyWriter calls wrote after each write.
type notifyWriter struct {
	w     io.Writer
	wrote func()
}

func (n notifyWriter) Write(p []byte) (int, error) {
	k, err := n.w.Write(p)
	n.wrote()
	return k, err
}

// --- the manager's half ---

// beginHeld starts the job in the holder (see begin: no lock is held
// across the spawn). Its streams follow the files the holder writes.
func (j *Job) beginHeld() func() {
	m := j.m
	path, argv, env, err := j.command(true) // the holder forks: checked here
	dir := j.spec.Dir
	if dir == "" {
		dir, _ = os.Getwd() // the daemon's, as for a job it runs itself (the holder's is /)
	}
	var st wire.JobStart
	if err == nil {
		// The streams exist before the spawn: the holder's events of the
		// job may come before its answer is taken (they go to follow).
		stdout := output.Follow(j.info.StdoutPath, m.o.FileCap, output.Stats{})
		stderr := output.Follow(j.info.StderrPath, m.o.FileCap, output.Stats{})
		j.mu.Lock()
		j.stdout, j.stderr = stdout, stderr
		j.mu.Unlock()
		j.follow.Store(&[2]*output.Stream{stdout, stderr})
		// The job's marks, the last two entries (see command), go with
		// every spawn; what comes before them is mostly a session's, the
		// same for each of its jobs (the holder's client may send it by
		// reference).
		tail := 0
		if m.o.Owner != "" {
			tail = 2
		}
		st, err = m.o.Holder.Spawn(wire.JobSpec{ID: j.info.ID, Path: path, Argv: argv, Env: env, EnvTail: tail, Dir: dir,
			Stdin: j.spec.Stdin, Stdout: j.info.StdoutPath, Stderr: j.info.StderrPath, Index: j.info.IndexPath(),
			FileCap: m.o.FileCap, Owner: m.o.Owner, LeftoverGrace: m.o.LeftoverGrace, Limits: j.wireLimits(), Timeout: j.spec.Timeout})
	}
	j.mu.Lock()
	j.starting = false
	if err != nil {
		j.info.Error = err.Error()
		if errors.Is(err, ErrHolderNotAnswering) {
			// Should the holder start it late, the holder's client
			// stops it.
			j.givenUp = true
			if j.inline {
				// Start returns this error instead of the job: no
				// caller has its id, so it raises no loose end.
				j.startErr = err
				j.detached = false
			}
		}
		if j.stdout != nil {
			j.closeStreams()
		}
		j.finishLocked(Failed)
		j.mu.Unlock()
		return nil
	}
	j.adoptLocked(st)
	stop := j.reason != "" // stopped while the spawn was in flight
	force, grace := j.stopForce, j.stopGrace
	j.mu.Unlock()
	if stop {
		j.stopHeld(force, grace)
	}
	return j.watchHeld
}

// maxKept bounds the jobs a manager runs itself and has its holder keep
// at once; past it a job is the holder's spawn. A job the daemon starts
// is in the daemon's session, and where the scheduler shares the CPU by
// session (autogroup: Linux's default where no cgroup controls the CPU)
// the daemon gets only its part of its session's share: unbounded, 100
// busy jobs of its own made ps take 2.0 s where, held (in the holder's
// session), they left it at 41 ms (BenchmarkPsUnderBusyJobs; bounded: 86
// against 29 ms), and TestJobsOutliveTheDaemon's MCP session could not
// connect under -race. (Four kept jobs pouring output on two cores
// made status answers 200-300 ms late in one run of four of reliability
// row 4: not the bound's doing but the pumps', which ran on the thread
// the daemon's calls ran on; see pumper.ownThread.) The common call (a
// short command) stays kept: it ends before the next one starts.
func maxKept() int32 { return int32(max(4, 2*runtime.NumCPU())) }

// keeper is the manager's Holder as a Keeper, when it keeps j's kind of
// job now: one without limits (the holder sets those on the cgroups it
// makes) or stdin (the holder feeds it), while fewer than maxKept jobs
// are kept, where the holder makes no cgroups or has one to lend. The
// mark and the cgroup's path come with it. ok counts j in m.kept, until
// beginKept's start fails or its leader is reaped (child.waited).
func (j *Job) keeper() (k Keeper, mark, slot string, ok bool) {
	k, ok = j.m.o.Holder.(Keeper)
	if !ok || !j.spec.Limits.IsZero() || j.spec.Stdin != nil || !keepSupported {
		return nil, "", "", false
	}
	if ok, mark = k.Keeps(); !ok || mark == "" {
		return nil, "", "", false
	}
	if n := j.m.kept.Add(1); n > maxKept() {
		j.m.kept.Add(-1)
		return nil, "", "", false // the holder's spawn: its session, not the daemon's
	}
	if c, cg := j.m.o.Holder.(interface{ Info() wire.Hello }); cg && c.Info().Cgroups != "" {
		if slot, ok = k.Spare(); !ok {
			j.m.kept.Add(-1)
			j.m.starts.noSpare.Add(1)
			return nil, "", "", false // the holder's start puts it in a cgroup now
		}
	}
	return k, mark, slot, true
}

// beginKept starts the job as a job of the manager's own (its child:
// begin's path without a Holder) and has its holder keep it (k.Keep),
// in the cgroup slot the holder lent ("" none). The holder keeps the
// job's running record with it (protocol 5; else the record of a job
// waited for inline is committed now, while it runs, as a held job's):
// should the daemon die, the holder takes the job over and the next
// daemon adopts it from that record.
func (j *Job) beginKept(k Keeper, mark, slot string) func() {
	m := j.m
	path, argv, env, err := j.command(false)
	var cmd *exec.Cmd
	var pipes *jobPipes
	if err == nil {
		cmd, pipes, err = newCmd(path, argv, j.spec.Dir, append(env[:len(env):len(env)], mark), nil, m.devNull, m.pipes)
	}
	var c *child
	pidfd := -1
	if err == nil {
		release, cerr := startInto(cmd, slot, &pidfd)
		if cerr != nil {
			m.o.Logger.Warn("a job runs without a cgroup of its own", "job", j.info.ID, "cgroup", slot, "err", cerr)
			slot = ""
		}
		c = &child{id: j.info.ID, owner: m.o.Owner, reaper: m.o.Reaper, leftover: m.o.LeftoverGrace,
			logger: m.o.Logger, cmd: cmd, pipes: pipes, pidStart: &j.pidStart, reaped: &j.reaped, timeout: j.spec.Timeout,
			release: make(chan struct{}), waited: func() { m.kept.Add(-1) }}
		if slot != "" {
			id := j.info.ID
			c.killedBy = func(wait time.Duration) (bool, error) { return k.Killed(id, wait) }
			c.slot = slot
		}
		if err = c.start(); err != nil {
			err = j.startError(err)
		}
		release()
	}
	if err != nil {
		if pidfd >= 0 {
			closeFD(pidfd)
		}
		if slot != "" {
			k.Unspare(slot) // a failed exec's child has left it: empty
		}
		m.kept.Add(-1)
		j.mu.Lock()
		defer j.mu.Unlock()
		j.starting = false
		pipes.closeAll()
		j.info.Error = err.Error()
		j.finishLocked(Failed)
		return nil
	}
	st := c.startTime() // before any wait: the pid is the job's
	j.pidStart.Store(st)
	started := time.Now()
	kept := wire.Kept{
		Spec: wire.JobSpec{ID: j.info.ID, Stdout: j.info.StdoutPath, Stderr: j.info.StderrPath, Index: j.info.IndexPath(),
			FileCap: m.o.FileCap, Owner: m.o.Owner, LeftoverGrace: m.o.LeftoverGrace, Timeout: j.spec.Timeout},
		Start: wire.JobStart{Pid: c.pid, PidStart: st, Started: started, Cgroup: slot, LimitsBy: c.by},
	}
	records := false
	if r, ok := k.(interface{ KeepsRecords() bool }); ok && r.KeepsRecords() {
		records = true
	}
	// A leader that has exited already (on few processors the child
	// often runs to its end before the fork returns: the parent is woken
	// behind it) is kept with its end, in one line then (KeepEnded), not
	// in a keep now and a kept_end then: one write and one wake-up of
	// the holder less on the call's path. Its cgroup, lent by the holder,
	// holds what it may have left meanwhile: should this daemon die
	// first, the holder ends what is in the cgroups it lent (Unlend).
	// Without a cgroup (nothing else would end such processes) or with
	// a holder that does not take such a keep, it is kept now.
	//
	// A job waited for inline (attached) that still runs is kept only
	// keepLater from now (keepLate), if it runs then: one that ends
	// before (most commands an agent runs) is kept with its end too;
	// until then it is the daemon's own, and ends with it. A job told to
	// a caller as running (detached: its id is answered at once) is kept
	// now; an attached one told so later (Detach) is kept first.
	var atEnd *wire.Kept
	later, exited := false, false
	if beforeKeep != nil {
		beforeKeep(c.pid)
	}
	if slot != "" && pidfd >= 0 && records && k.KeepsEnded() {
		j.mu.Lock()
		attached := !j.detached
		j.mu.Unlock()
		exited = proc.Exited(c.pid)
		switch {
		case exited || keepAllAtEnd:
			atEnd = &kept
		case attached && keepLater > 0:
			atEnd, later = &kept, true
		}
	}
	kerr := errors.New("no pidfd")
	switch {
	case atEnd != nil && later:
		kerr = nil // its pidfd is kept for the keep
		c.onReaped = j.keepSettled
	case atEnd != nil:
		kerr = nil
		closeFD(pidfd)
		c.ended = exited // not one HIVE_KEEP_AT_END keeps so while it runs
	case pidfd >= 0:
		if records {
			kept.Record = j.keptRecord(kept.Start)
		}
		kerr = k.Keep(kept, pidfd, fdOf(pipes.outR), fdOf(pipes.errR))
		closeFD(pidfd)
	}
	if atEnd == nil {
		m.pipes.refill() // the next start's, while this job runs
	} // else once its callers had its end (watch): it ran already
	if kerr != nil {
		// It runs all the same, as a job of the daemon's own: it ends
		// with the daemon.
		m.o.Logger.Warn("the holder does not keep a job: it ends if the daemon does", "job", j.info.ID, "err", kerr)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.starting = false
	j.child = c
	j.kept = kerr == nil && atEnd == nil
	if atEnd != nil {
		j.keepAtEnd = &keepAtEnd{k: *atEnd, in: j.info, pidfd: -1}
		if later {
			j.keepAtEnd.keeper, j.keepAtEnd.pidfd, j.keepAtEnd.pipes = k, pidfd, pipes
			j.keepAtEnd.t = time.AfterFunc(keepLater, j.keepLate)
		}
	}
	j.recordKept = j.kept && kept.Record != nil
	// Its streams now, while it runs (as a held job's exist once it
	// is started): a caller may read them as soon as Start returns.
	j.createStreamsLocked()
	j.cgroup = slot
	j.info.Pid = c.pid
	j.info.PidStart = st
	j.info.Started = started
	j.info.LimitsBy = c.by
	j.runningLocked()
	if j.kept || atEnd != nil {
		j.runSeq = j.seq.Load()
		if j.kept && !j.detached && !j.recordKept {
			m.records.hurry() // see adoptLocked
		}
	}
	if j.reason != "" { // stopped while it started
		force, grace, kept := j.stopForce, j.stopGrace, j.kept
		return func() {
			j.stopChild(c, kept, force, grace)
			j.watch(c)
		}
	}
	return func() { j.watch(c) }
}

// keptRecord is the running record of the job as st starts it, for
// its holder to keep (wire.Kept.Record): the record a next daemon adopts
// the job from should this one die before it committed it. nil if it
// cannot be encoded.
func (j *Job) keptRecord(st wire.JobStart) json.RawMessage {
	j.mu.Lock()
	in := j.info
	j.mu.Unlock()
	return runningRecord(in, st)
}

// keepAllAtEnd (HIVE_KEEP_AT_END=always, read at start) keeps every job
// that would be kept at its end, its leader ended or not: a job then
// ends with its daemon, by its cgroup (as a job the holder does not keep
// does). For the tests of what the holder does when a daemon dies before
// it told a job's end (reliability row 24): which jobs ended before
// their fork returned is the scheduler's to say.
var keepAllAtEnd = os.Getenv("HIVE_KEEP_AT_END") == "always"

// lateKeepMade, set by tests, runs once keepLate made its keep, before it
// takes the job's lock.
var lateKeepMade func()

// beforeKeep, set by tests, runs once a kept job's fork returned, before
// its leader is looked at (see beginKept).
var beforeKeep func(pid int)

// keepAtEnd is the keep of a job kept at its end (see beginKept): the
// keep, and the job's Info as it started, for its running record. For a
// job whose keep was put off while it runs (keepLate): its holder, its
// leader's pidfd (-1 none) and pipes, and the timer of the keep.
type keepAtEnd struct {
	k      wire.Kept
	in     Info
	keeper Keeper
	pidfd  int
	pipes  *jobPipes
	t      *time.Timer
}

// keep is the job's keep with its running record (wire.Kept.Record).
func (ke *keepAtEnd) keep() wire.Kept {
	k := ke.k
	k.Record = runningRecord(ke.in, ke.k.Start)
	return k
}

// keepLater is how long an attached job runs before it is kept (see
// beginKept): most commands an agent runs end within it, and are kept
// with their end, in one line. A variable for the tests.
var keepLater = 50 * time.Millisecond

// keepLate keeps a job whose keep was put off (beginKept) and that runs
// still: with its holder now, as beginKept would have at its start. One
// whose end came (keepSettled) is kept with its end (watch); one being
// stopped too (a stop its holder was not told of would not go on should
// the holder take the job over). Called by the keep's timer, and before
// the job is told as running (Detach) or let go (releaseKept).
func (j *Job) keepLate() {
	j.keepMu.Lock()
	defer j.keepMu.Unlock()
	j.mu.Lock()
	ke := j.keepAtEnd
	if ke == nil || ke.pidfd < 0 || j.keepOver || j.reason != "" {
		j.mu.Unlock()
		return
	}
	j.keepAtEnd = nil
	ke.t.Stop()
	k := ke.keep()
	j.mu.Unlock()
	// The pipes stay open meanwhile: the end closes them only once
	// keepSettled has the lock this holds.
	err := ke.keeper.Keep(k, ke.pidfd, fdOf(ke.pipes.outR), fdOf(ke.pipes.errR))
	closeFD(ke.pidfd)
	if lateKeepMade != nil {
		lateKeepMade()
	}
	j.m.pipes.refill() // the next start's, which this one took, while it runs
	j.mu.Lock()
	if err != nil {
		j.mu.Unlock()
		// It runs all the same, as a job of the daemon's own.
		j.m.o.Logger.Warn("the holder does not keep a job: it ends if the daemon does", "job", j.info.ID, "err", err)
		return
	}
	j.kept = true
	j.recordKept = k.Record != nil
	if !j.detached && !j.recordKept {
		j.m.records.hurry() // see adoptLocked
	}
	stopped, id, force, grace := j.reason != "", j.info.ID, j.stopForce, j.stopGrace
	j.mu.Unlock()
	if stopped {
		// Stopped while the keep was made (its stop, which found it
		// not kept, told the holder nothing): told now, with no lock of
		// the job's held but keepMu, so that what lets the job go
		// (releaseKept, which takes keepMu first) comes after it, and a
		// holder that takes the job over goes on with the stop.
		if err := ke.keeper.KeepStop(id, force, grace); err != nil {
			j.m.o.Logger.Warn("the holder was not told of a kept job's stop", "job", id, "err", err)
		}
	}
}

// keepSettled is called once the leader of a job whose keep was put off
// is reaped, before its pipes close: no keep is made from then on (its
// end's keep is: watch), and one under way is over.
func (j *Job) keepSettled() {
	j.keepMu.Lock()
	defer j.keepMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	j.keepOver = true
	if ke := j.keepAtEnd; ke != nil && ke.t != nil {
		ke.t.Stop()
	}
}

// runningRecord is in's running record as st starts it (see keptRecord).
func runningRecord(in Info, st wire.JobStart) json.RawMessage {
	in.State, in.Pid, in.PidStart, in.Started, in.LimitsBy = Running, st.Pid, st.PidStart, st.Started, st.LimitsBy
	rec := toRecord(in)
	if b, ok := rec.AppendJSON(make([]byte, 0, 512)); ok {
		return b // json.Marshal's encoding, without reflection (store.Job.AppendJSON)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil
	}
	return b
}

// recordOfHeld is the record of a job x the holder holds that the store
// has none of (known: the ids it has), from the record its daemon kept
// with it (wire.Kept.Record): a job that daemon answered for before it
// committed the job's record, and died. ok is false for a job of no such
// record, or one that is not a running record of x.
func recordOfHeld(x wire.Job, known map[string]bool) (rec store.Job, ok bool) {
	if len(x.Record) == 0 || known[x.ID] {
		return store.Job{}, false
	}
	if err := json.Unmarshal(x.Record, &rec); err != nil || rec.ID != x.ID || State(rec.State) != Running {
		return store.Job{}, false
	}
	return rec, true
}

// stopChild stops the job's own child c; a kept job's holder is told
// first (Keeper.KeepStop). No lock of the job's is held: a holder that
// does not read (stopped) must stall no view of the job.
func (j *Job) stopChild(c *child, kept bool, force bool, grace time.Duration) {
	if k, ok := j.m.o.Holder.(Keeper); ok && kept {
		if err := k.KeepStop(j.info.ID, force, grace); err != nil {
			j.m.o.Logger.Warn("the holder was not told of a kept job's stop", "job", j.info.ID, "err", err)
		}
	}
	c.stop(force, grace)
}

// wireLimits are the job's limits as a spawn carries them (nil: none).
func (j *Job) wireLimits() *limits.Limits {
	if j.spec.Limits.IsZero() {
		return nil
	}
	l := j.spec.Limits
	return &l
}

// stopHeld sends a held job's stop to its holder, with no lock held: an
// answer can take until the holder's client gives up on it. A holder
// that does not answer is the error (the stop is sent: it takes it when
// it runs again); another failure is only logged, as the job may have
// ended meanwhile.
func (j *Job) stopHeld(force bool, grace time.Duration) error {
	err := j.m.o.Holder.Stop(j.info.ID, force, grace)
	if err == nil {
		return nil
	}
	j.m.o.Logger.Warn("could not stop a held job", "job", j.info.ID, "err", err)
	if errors.Is(err, ErrHolderNotAnswering) {
		return fmt.Errorf("job %s: stop: %w", j.info.ID, err)
	}
	return nil
}

// adoptLocked makes the job running in its holder, as st says.
func (j *Job) adoptLocked(st wire.JobStart) {
	j.held = true
	j.info.Pid = st.Pid
	j.info.PidStart = st.PidStart
	j.pidStart.Store(st.PidStart)
	j.info.Started = st.Started
	j.cgroup = st.Cgroup
	j.info.LimitsBy = st.LimitsBy
	if st.LimitsBy == nil {
		// A holder of an older build ran it without its limits.
		j.info.LimitsBy = limits.NoneOf(j.info.Limits)
	}
	j.runningLocked()
	j.runSeq = j.seq.Load()
	j.markStarted()
	if !j.detached {
		// Likely waited for inline: its running record is committed
		// now, while it runs, so that its end can be told without a
		// commit (see Durable). A detached job's is synced by Start.
		j.m.records.hurry()
	}
}

// watchHeld waits for the held job's end and records it; a manager that
// lets its jobs go (Release) stops waiting, and the holder keeps the job.
func (j *Job) watchHeld() {
	select {
	case e := <-j.heldEnd:
		j.endHeld(e)
	case <-j.m.released:
	}
}

// endHeld records a held job's end, then tells the holder so.
func (j *Job) endHeld(e wire.JobEnd) {
	m := j.m
	j.mu.Lock()
	j.reaped.Store(true)
	if e.Error == ErrHolderLost.Error() {
		// A lost holder tells nothing: the counts are what the files
		// hold now. A holder's end has them all (it closed the files
		// first): no look at the files on the answer's path.
		j.stdout.Stats()
		j.stderr.Stats()
	}
	j.stdout.Advance(e.Stdout.Stats(true))
	j.stderr.Advance(e.Stderr.Stats(true))
	j.closeStreams()
	if e.Exited {
		code := e.ExitCode
		j.info.ExitCode = &code
		j.info.Signal = e.Signal
	}
	if msg := e.Error; msg != "" {
		if msg == ErrHolderLost.Error() {
			msg = m.holderLostError()
		}
		if j.info.Error != "" {
			j.info.Error += "; "
		}
		j.info.Error += msg
	}
	j.info.Leftover = e.Leftover
	j.info.Usage, j.info.LimitHit = e.Usage, e.LimitHit
	if !e.Ended.IsZero() {
		j.info.Ended = e.Ended
	}
	end := Done
	switch {
	case j.reason != "":
		end = j.reason
	case e.Error == ErrHolderLost.Error():
		end = Interrupted
	case e.Stopped:
		end = Killed // stopped by a daemon before this one
	}
	if m.journal != nil && !j.detached && !j.info.State.Terminal() {
		// Its record to the journal before its callers are told, as a
		// kept job's (see watch): they are told at once then, whatever
		// became of its running record's commit (a job is the holder's
		// spawn when the holder had no cgroup to lend: its answer
		// waited for that commit, and for ever while the store took no
		// writes).
		j.settleLocked(end)
		j.journalLocked()
		j.publishLocked()
	} else {
		j.finishLocked(end)
	}
	// Its holder keeps the end until acked, and a next daemon would
	// record from it this very state (no reason of this daemon's: see
	// Durable).
	j.endKept = end == Done && e.Error == ""
	j.mu.Unlock()
	select {
	case <-j.heldEnd: // told again while this one was recorded
	default:
	}
	if e.Error == ErrHolderLost.Error() {
		return // nothing to acknowledge
	}
	m.sup.AckWhenRecorded(j.info.ID)
}

// HeldProgress tells the manager a held job's counters (from its holder).
func (m *Manager) HeldProgress(id string, stdout, stderr wire.Counts) {
	m.mu.Lock()
	j, ok := m.jobs[id]
	m.mu.Unlock()
	if !ok {
		return
	}
	if f := j.follow.Load(); f != nil { // never j.mu: see Job.follow
		f[0].Advance(stdout.Stats(false))
		f[1].Advance(stderr.Stats(false))
	}
}

// HeldEnded tells the manager that a held job ended (from its holder):
// see supervise.Core.Ended. An end of a job this manager does not hold is
// kept for the adoption at New, or acknowledged once the store has the
// job's end.
func (m *Manager) HeldEnded(e wire.JobEnd) { m.sup.Ended(e.ID, e) }

// HolderLost tells the manager that its holder died: its jobs end as
// interrupted, like those of a daemon that died, and what is left of
// them, proven by their marks, is terminated (see supervise.Core.Lost).
func (m *Manager) HolderLost() { m.sup.Lost() }

// Release lets the manager's jobs go without stopping them: the holder
// keeps running them, and the next daemon adopts them. Pending jobs are
// cancelled (interrupted), and the manager is closed like Shutdown. Without
// a Holder it is Shutdown.
func (m *Manager) Release(note string) error {
	if m.o.Holder == nil {
		return errors.New("release: the jobs have no holder")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	queue := m.queue
	m.queue = nil
	m.mu.Unlock()
	interruptQueued(queue, note)
	m.releaseKept()
	close(m.released)
	m.wg.Wait()
	m.cancel()
	m.records.close()
	if m.devNull != nil {
		m.devNull.Close()
	}
	m.paths.close()
	return nil
}

// releaseKept lets the running jobs the manager started itself and its
// holder keeps go to the holder (Release): their pumps stop reading,
// what their streams and indexes hold is written, and the holder takes
// each over from there (holder OpTake); their goroutines stop waiting.
func (m *Manager) releaseKept() {
	k, ok := m.o.Holder.(interface{ Take([]wire.Job) error })
	if !ok {
		return
	}
	m.mu.Lock()
	var kept []*Job
	for _, j := range m.jobs {
		kept = append(kept, j)
	}
	m.mu.Unlock()
	var takes []wire.Job
	var cs []*child
	for _, j := range kept {
		j.keepLate() // one whose keep was put off: kept now, to be let go
		j.mu.Lock()
		c, ok := j.child, j.kept && !j.info.State.Terminal()
		j.mu.Unlock()
		if !ok || c == nil {
			continue
		}
		if !c.releasePumps(2 * time.Second) {
			m.o.Logger.Warn("a job's pumps did not stop reading in time: the holder reads on from there", "job", j.info.ID)
		}
		j.mu.Lock()
		x := wire.Job{ID: j.info.ID}
		if j.index != nil {
			j.index.Snapshot() // its marks in the file
		}
		if j.stdout != nil {
			x.Stdout, x.Stderr = wire.CountsOf(j.stdout.Stats()), wire.CountsOf(j.stderr.Stats())
		}
		j.mu.Unlock()
		takes = append(takes, x)
		cs = append(cs, c)
	}
	if len(takes) == 0 {
		return
	}
	if err := k.Take(takes); err != nil {
		m.o.Logger.Warn("the holder did not take the jobs the daemon let go: it takes them over once the daemon is gone", "jobs", len(takes), "err", err)
	} else {
		m.o.Logger.Info("the holder took over the jobs the daemon ran", "jobs", len(takes))
	}
	for _, c := range cs {
		close(c.release)
	}
}

// terminateLeft terminates what is left of the jobs ins, proven theirs by
// their leaders' pids and start times or by their marks (see
// findOrphans), and returns how many processes that was. A process
// marked with another job's id that the store knows is left alone, as
// at a daemon's start: its job ended and let it go.
func (m *Manager) terminateLeft(ins []Info) int {
	left := make([]store.Job, len(ins))
	known := map[string]bool{}
	if ids, err := m.o.Store.JobIDs(context.Background()); err == nil {
		for _, id := range ids {
			known[id] = true
		}
	}
	m.mu.Lock()
	for id := range m.jobs {
		known[id] = true
	}
	m.mu.Unlock()
	for i, in := range ins {
		left[i] = toRecord(in)
		known[in.ID] = true
	}
	targets, _ := findOrphans(left, known, m.o.Owner, proc.BootID())
	return proc.Terminate(targets, m.o.LeftoverGrace)
}

// HeldResync catches up with the holder after its connection was
// replaced (events may have been lost meanwhile): the ends it holds are
// told again (each counts once), and counters come from the files. A
// job the holder runs that this manager does not (a spawn whose answer
// was lost with the connection, after the manager gave up on it) is
// stopped with SIGKILL, as at New. See supervise.Core.Resync.
func (m *Manager) HeldResync() { m.sup.Resync() }

// heldKind is what the job manager plugs into its supervise.Core.
type heldKind struct{ m *Manager }

func (k heldKind) List() ([]wire.Job, error) { return k.m.o.Holder.Held() }
func (heldKind) ID(x wire.Job) string        { return x.ID }
func (heldKind) End(x wire.Job) (e wire.JobEnd, ok bool) {
	if x.End == nil {
		return e, false
	}
	return *x.End, true
}

func (k heldKind) Standing(id string) supervise.Standing {
	k.m.mu.Lock()
	j, ok := k.m.jobs[id]
	k.m.mu.Unlock()
	if !ok {
		return supervise.Unknown
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.held:
		return supervise.Held
	case j.starting:
		return supervise.Starting
	}
	return supervise.Other
}

// Progress: an end's counters come with the end.
func (k heldKind) Progress(x wire.Job) {
	if x.End == nil {
		k.m.HeldProgress(x.ID, x.Stdout, x.Stderr)
	}
}

func (k heldKind) Tell(id string, e wire.JobEnd) supervise.Told {
	k.m.mu.Lock()
	j, ok := k.m.jobs[id]
	k.m.mu.Unlock()
	if !ok {
		// A job this daemon does not know: its end was recorded before
		// (or is queued still, for a job trimmed from memory).
		return supervise.NotOurs
	}
	select {
	case <-j.done:
		// Ended, and the holder still tells it: its ack was lost (a
		// reconnect), or it is not recorded yet. Once it is, again.
		return supervise.Recorded
	default:
	}
	select {
	case j.heldEnd <- e:
	default: // told twice while the first is being recorded: endHeld drops it
	}
	return supervise.Taken
}

func (k heldKind) Stop(id string) error { return k.m.o.Holder.Stop(id, true, 0) }
func (heldKind) Drop(string)            {}

// Recorded waits for the job's last record to be committed, which no one
// is hurried into: the end's record goes with the next commit, as a job
// of the daemon's own does. One never committed (a store failing until
// the daemon ends) never calls then.
func (k heldKind) Recorded(id string, then func()) {
	k.m.mu.Lock()
	j, ok := k.m.jobs[id]
	k.m.mu.Unlock()
	seq := k.m.records.last()
	if ok {
		seq = j.seq.Load()
	}
	k.m.records.whenCommitted(seq, then)
}

func (k heldKind) Ack(id string) error { return k.m.o.Holder.Ack(id) }

// Supervised: a held job not ended, and a job whose spawn is in flight
// (it fails: the connection is gone) or went unanswered (the holder may
// have started it: its processes carry its marks).
func (k heldKind) Supervised() (held, flight []*Job) {
	m := k.m
	m.mu.Lock()
	all := make([]*Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		all = append(all, j)
	}
	m.mu.Unlock()
	for _, j := range all {
		j.mu.Lock()
		switch {
		case (j.held || j.kept) && !j.info.State.Terminal():
			held = append(held, j)
		case j.starting || j.givenUp:
			flight = append(flight, j)
		}
		j.mu.Unlock()
	}
	return held, flight
}

// Terminate terminates what is left of the jobs by their leaders and
// marks (terminateLeft), and what is left in the held jobs' cgroups,
// which has no marks (an `env -i` escape).
func (k heldKind) Terminate(held, flight []*Job) int {
	m := k.m
	recs := make([]Info, 0, len(held)+len(flight))
	var cgroups []string
	for _, j := range flight {
		recs = append(recs, j.Info())
	}
	for _, j := range held {
		j.mu.Lock()
		recs = append(recs, j.snapshotLocked())
		if j.cgroup != "" {
			cgroups = append(cgroups, j.cgroup)
		}
		j.mu.Unlock()
	}
	n := m.terminateLeft(recs)
	for _, c := range proc.KillJobCgroups(m.o.Owner, m.o.LeftoverGrace, cgroups...) {
		n += c
	}
	return n
}

func (heldKind) Interrupt(j *Job) {
	j.mu.Lock()
	if j.kept {
		// The manager's own child, ended as a held job is: as
		// interrupted, its processes terminated (Terminate).
		j.kept = false
		if j.reason == "" {
			j.reason = Interrupted
		}
		if j.info.Error == "" {
			j.info.Error = j.m.holderLostError()
		}
		c := j.child
		j.mu.Unlock()
		c.stop(true, 0)
		return
	}
	j.mu.Unlock()
	select {
	case j.heldEnd <- wire.JobEnd{ID: j.info.ID, Error: ErrHolderLost.Error(), Ended: time.Now()}:
	default:
	}
}

// HeldSink hears a holder's events: see Manager.
type HeldSink interface {
	HeldProgress(id string, stdout, stderr wire.Counts)
	HeldEnded(wire.JobEnd)
	HolderLost()
}

// adoptHeld adopts the running jobs of left (the records a daemon left
// pending or running) that the holder still holds or holds the end of,
// and returns the others. What the holder holds with no such record (an
// attached job whose caller went with the daemon, a start never
// recorded) is stopped, and ends the store has are acknowledged (see
// supervise.Core.Adopt).
func (m *Manager) adoptHeld(left []store.Job, known map[string]bool) ([]store.Job, error) {
	if l, ok := m.o.Holder.(interface{ Listen(HeldSink) }); ok {
		l.Listen(m)
	}
	// A job's record says running, or pending: a detached job whose
	// start was answered before its running record was committed (see
	// Start), whose pid and start the holder tells.
	open := make(map[string]store.Job, len(left))
	for _, rec := range left {
		if s := State(rec.State); s == Running || s == Pending {
			open[rec.ID] = rec
		}
	}
	adopted := map[string]bool{}
	err := m.sup.Adopt(func(x wire.Job, early *wire.JobEnd) bool {
		rec, ok := open[x.ID]
		if !ok {
			if rec, ok = recordOfHeld(x, known); !ok {
				return false
			}
			known[x.ID] = true
			if n, hex := parseHexID(x.ID); hex {
				m.hexIDs[n] = struct{}{}
			}
		}
		m.adopt(rec, x, early)
		adopted[x.ID] = true
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("the holder of the jobs: %w", err)
	}
	rest := left[:0:0]
	for _, rec := range left {
		if !adopted[rec.ID] {
			rest = append(rest, rec)
		}
	}
	if len(adopted) > 0 {
		m.o.Logger.Info("adopted the jobs the holder kept running", "jobs", len(adopted))
	}
	return rest, nil
}

// adopt makes the job of rec, which the holder holds as x, this
// manager's; early is its end if told since the listing.
func (m *Manager) adopt(rec store.Job, x wire.Job, early *wire.JobEnd) {
	in := fromRecord(rec)
	j := &Job{m: m, detached: true, done: make(chan struct{}), started: make(chan struct{}), heldEnd: make(chan wire.JobEnd, 1),
		spec: Spec{Cmd: in.Cmd, Argv: in.Argv, ShellKind: in.ShellKind, Dir: in.Cwd, Timeout: in.Timeout, Name: in.Name,
			Source: in.Source, Quiet: in.Quiet, KillOnTimeout: in.KillOnTimeout, Limits: in.Limits}}
	j.info = in
	j.stdout = output.Follow(in.StdoutPath, m.o.FileCap, x.Stdout.Stats(false))
	j.stderr = output.Follow(in.StderrPath, m.o.FileCap, x.Stderr.Stats(false))
	j.follow.Store(&[2]*output.Stream{j.stdout, j.stderr})
	m.mu.Lock()
	m.jobs[in.ID] = j
	if in.Name != "" {
		m.names[in.Name] = in.ID
	}
	m.order = append(m.order, in.ID)
	m.running++
	m.wg.Add(1)
	m.mu.Unlock()
	var e wire.JobEnd
	ended := early != nil
	if ended {
		e = *early
	}
	if x.End != nil {
		e, ended = *x.End, true
	}
	j.mu.Lock()
	if ended {
		j.spec.Timeout = 0 // it ended in the gap: no timer to end it again
	}
	j.adoptLocked(x.JobStart)
	j.mu.Unlock()
	if ended {
		select { // the end may come as an event too: once is enough
		case j.heldEnd <- e:
		default:
		}
	}
	go func() {
		defer m.wg.Done()
		j.watchHeld()
		m.slotFreed(j)
	}()
}
