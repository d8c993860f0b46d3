package job

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
)

// drainQuiet is how long the output readers may take to reach EOF after
// the job's group is gone; a process that escaped the group (setsid) and
// holds a pipe open then cannot delay completion by more.
const drainQuiet = 200 * time.Millisecond

// bulkOutput is the output after which a job's pipe is grown.
const bulkOutput = 64 << 10

// bufPool holds the read buffers of streams that pour (bulkOutput);
// smallBufPool those every pump starts with. A job that prints little
// never takes a large one: with a large buffer for every stream, the
// buffers of the jobs running at once stayed in the pool between
// collections (2 x 256 KiB a job), and the heap the collector lets grow
// on top of them (GOGC 400 in the daemon and the holder) five times that:
// a holder grew from 31 to 94 MiB over 10 000 `hive run true` (8 at a
// time), and from 30 to 78 MiB over 20 000 held jobs (32 at a time).
var (
	bufPool      = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
	smallBufPool = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}
)

// begin starts the job's process. It returns the rest of the job's life
// (wait, clean up, record), to run on the goroutine that owns the child, or
// nil if the job ended without running (cancelled, or failed to start).
//
// No lock is held while the process starts (a fork and exec, or the
// holder's spawn: either can take long, and a holder stopped with
// SIGSTOP never answers). The job is marked starting under j.mu and stays
// pending for everyone else; the outcome is applied under j.mu again,
// and a stop asked meanwhile (Kill, a shutdown) is then sent to the
// process that started: it is never left running.
func (j *Job) begin() func() {
	m := j.m
	j.mu.Lock()
	if j.info.State.Terminal() {
		j.mu.Unlock()
		return nil
	}
	if j.reason != "" { // stopped between dispatch and start
		j.info.Error = "cancelled before it started"
		j.finishLocked(j.reason)
		j.mu.Unlock()
		return nil
	}
	j.starting = true
	j.mu.Unlock()
	if m.o.Holder != nil {
		if k, mark, slot, ok := j.keeper(); ok {
			m.starts.own.Add(1)
			return j.beginKept(k, mark, slot)
		}
		m.starts.holder.Add(1)
		return j.beginHeld()
	}
	m.starts.own.Add(1)
	cmd, pipes, err := j.prepare()
	var c *child
	if err == nil {
		c = &child{id: j.info.ID, owner: m.o.Owner, reaper: m.o.Reaper, cgroups: m.o.Cgroups, leftover: m.o.LeftoverGrace,
			logger: m.o.Logger, cmd: cmd, pipes: pipes, pidStart: &j.pidStart, reaped: &j.reaped,
			limits: j.spec.Limits, timeout: j.spec.Timeout}
		if err = c.start(); err != nil {
			err = j.startError(err)
		}
	}
	m.pipes.refill() // the next start's, while this job runs
	j.mu.Lock()
	defer j.mu.Unlock()
	j.starting = false
	if err != nil {
		pipes.closeAll()
		j.info.Error = err.Error()
		j.finishLocked(Failed)
		return nil
	}
	j.child = c
	pid := c.pid
	j.info.Pid = pid
	j.info.LimitsBy = c.by
	if j.detached {
		// Its id is handed out once the record is stored: the record
		// must carry what a restarted daemon needs to find the group.
		// An attached job's start time is read only if its record is
		// written while it runs (most end before: see fillPidStart).
		j.info.PidStart = c.startTime()
		j.pidStart.Store(j.info.PidStart)
	} else if m.o.Owner != "" && proc.Supported {
		// What proves a process that left the group to be this job's
		// (see sweepEscapes) includes starting after its leader.
		j.pidStart.Store(c.startTime())
	}
	j.runningLocked()
	if j.reason != "" { // stopped while it started
		c.stop(j.stopForce, j.stopGrace)
	}
	return func() { j.watch(c) }
}

// wireEndLocked is the job's end as a holder keeps it (OpKeptEnd).
func (j *Job) wireEndLocked() wire.JobEnd {
	e := wire.JobEnd{ID: j.info.ID, Exited: j.info.ExitCode != nil, Signal: j.info.Signal, Error: j.info.Error,
		Leftover: j.info.Leftover, Stopped: j.reason != "", Ended: time.Now(), Usage: j.info.Usage, LimitHit: j.info.LimitHit,
		Stdout: wire.Counts{Total: j.info.StdoutBytes, InFile: j.info.StdoutBytes - j.info.StdoutDropped, Dropped: j.info.StdoutDropped},
		Stderr: wire.Counts{Total: j.info.StderrBytes, InFile: j.info.StderrBytes - j.info.StderrDropped, Dropped: j.info.StderrDropped}}
	if j.info.ExitCode != nil {
		e.ExitCode = *j.info.ExitCode
	}
	j.info.Ended = e.Ended // the same instant in the record and the holder's
	return e
}

// runningLocked moves a started job to running.
func (j *Job) runningLocked() {
	j.info.State = Running
	if j.info.Started.IsZero() {
		j.info.Started = time.Now()
	}
	if j.spec.Timeout > 0 {
		j.timeoutT = time.AfterFunc(max(time.Until(j.info.Started.Add(j.spec.Timeout)), 0), func() { j.stop(TimedOut, j.spec.KillOnTimeout) })
	}
	j.m.putLocked(j)
}

// watch is the one goroutine that waits on the child: it pumps output,
// waits, cleans up the group and records the end.
func (j *Job) watch(c *child) {
	// The output files are created while the child already runs (its
	// output waits in the pipes): file creation stays off the start path.
	j.mu.Lock()
	if j.stdout == nil {
		j.createStreamsLocked()
	}
	j.mu.Unlock()
	j.markStarted()
	outW, errW := io.Writer(j.stdout), io.Writer(j.stderr)
	if j.index != nil {
		outW, errW = j.index.Writer(0), j.index.Writer(1)
	}
	e := c.run(outW, errW)
	if e.released {
		return // its holder has it now (Release)
	}

	j.mu.Lock()
	j.closeStreams()
	if e.exited {
		j.info.ExitCode = &e.code
		j.info.Signal = e.sig
	} else if e.err != nil {
		j.info.Error = e.err.Error()
	}
	j.info.Leftover = e.leftover
	j.info.Usage, j.info.LimitHit = &e.usage, e.hit
	if e.note != "" {
		if j.info.Error != "" {
			j.info.Error += "; "
		}
		j.info.Error += e.note
	}
	if !e.holderLost && (j.kept || j.keepAtEnd != nil) && (e.sig != nil || e.code > 128) && j.reason == "" {
		// Killed by a signal hive did not send, or a shell whose child
		// was (exit 128+n): its holder's guard's, if the holder is gone
		// (it ends what the holder kept, by marks, one by one: a shell
		// may see its child die and exit before its own signal comes).
		if k, ok := j.m.o.Holder.(Keeper); ok && k.HolderGone() {
			e.holderLost = true
		}
	}
	if e.holderLost && j.reason == "" {
		// As a held job whose holder died.
		j.reason = Interrupted
		if j.info.Error == "" {
			j.info.Error = j.m.holderLostError()
		}
	}
	// later, if set, tells the holder of the job once its end is
	// published: a job kept at its end whose record the journal has.
	var later func()
	if k, ok := j.m.o.Holder.(Keeper); ok && (j.kept || j.keepAtEnd != nil) {
		// Its holder keeps its end until the ack, and tells it to the
		// next daemon should this one die before its record: a plain
		// end is told to its callers without waiting for its record
		// (see Durable), as a held job's. Told with no lock held: a
		// holder that does not read (stopped) must stall no view of
		// the job. A job kept at its end (beginKept) is kept so now,
		// with its running record; else it stays the daemon's own (its
		// end is committed before it is told).
		e := j.wireEndLocked()
		ke := j.keepAtEnd
		if ke != nil && ke.pidfd >= 0 {
			closeFD(ke.pidfd) // its keep was put off: not made (keepSettled)
			ke.pidfd = -1
		}
		if ke != nil && j.m.journal != nil && !j.detached {
			// Its record goes to the journal before its callers are
			// told (below): the holder is told after them, off the
			// answer's path (a line to the holder wakes it, and a
			// processor woken beside the answer's writer is one its
			// reader could have had), and its keep line is made then
			// too. Until then the job is this daemon's own in the
			// cgroup the holder lent, as it was while it ran.
			j.keepAtEnd = nil
			later = func() { j.keptLater(k, ke, e) }
		} else {
			var atEnd wire.Kept
			if ke != nil {
				atEnd = ke.keep()
			}
			j.mu.Unlock()
			var told bool
			if ke != nil {
				told = k.KeepEnded(atEnd, e) == nil
			} else {
				told = k.KeepEnd(e.ID, e) == nil
			}
			j.mu.Lock()
			if ke != nil {
				j.keepAtEnd = nil
				j.keptEndLocked(told, atEnd.Record != nil)
			} else {
				j.endKept = told && j.reason == "" && j.info.Error == ""
			}
		}
	}
	end := Done
	if j.reason != "" {
		end = j.reason
	}
	if later != nil {
		j.settleLocked(end)
		j.journalLocked()
		j.publishLocked()
	} else {
		j.finishLocked(end)
	}
	kept := j.kept
	j.mu.Unlock()
	if later != nil {
		// Its callers first: the processor goes to them (the daemon
		// runs with one; a yield puts this goroutine behind them).
		runtime.Gosched()
		later()
	} else if kept {
		// Its holder keeps it until the end is recorded (asked with no
		// lock of the job's held: see heldKind.Recorded).
		j.m.sup.AckWhenRecorded(j.info.ID)
	}
	if j.m.pipes.empty() {
		// The next start's pipes, which this one took and did not
		// make again (a job that ended before its fork returned: see
		// beginKept), once its callers have its end: the processor goes
		// to them first (the daemon runs with one; a yield puts this
		// goroutine behind them).
		if later == nil {
			runtime.Gosched()
		}
		j.m.pipes.refill()
	}
}

// journalLocked writes the record of the job, which has just ended, to
// the manager's journal, before its callers are told: they are told at
// once then (Durable), and its record is committed after the linger. A
// journal that fails leaves them waiting for the commit. j.mu is held.
func (j *Job) journalLocked() {
	seq := j.seq.Load()
	rec := toRecord(j.snapshotLocked())
	if err := j.m.journal.append(&rec, seq); err != nil {
		j.m.journalFailed(err)
		return
	}
	j.journaled.Store(seq)
}

// keptLater gives the holder a job kept at its end whose end has been
// published (see watch): its keep and its end in one line, as before
// them, then the ack once its record is committed.
func (j *Job) keptLater(k Keeper, ke *keepAtEnd, e wire.JobEnd) {
	atEnd := ke.keep()
	told := k.KeepEnded(atEnd, e) == nil
	j.mu.Lock()
	j.keptEndLocked(told, atEnd.Record != nil)
	j.mu.Unlock()
	if told {
		j.m.sup.AckWhenRecorded(j.info.ID)
	}
}

// keptEndLocked notes whether the holder keeps the end of a job kept at
// its end (told), its running record with it (record). j.mu is held.
func (j *Job) keptEndLocked(told, record bool) {
	j.kept, j.keptAtEnd = told, told
	j.recordKept = told && record
	j.endKept = told && j.reason == "" && j.info.Error == ""
}

type jobPipes struct {
	outR, outW, errR, errW *os.File
}

func (p *jobPipes) closeChildEnds() {
	if p == nil {
		return
	}
	p.outW.Close()
	p.errW.Close()
}

func (p *jobPipes) closeAll() {
	if p == nil {
		return
	}
	for _, f := range []*os.File{p.outR, p.outW, p.errR, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

// createStreamsLocked creates the output streams. If a file cannot be
// created the stream stays in memory only (its ring) and Info.Error says so.
func (j *Job) createStreamsLocked() {
	var note string
	// A job whose keep was put off (beginKept) may be kept while it
	// runs: its streams are a kept job's from the start.
	later := j.keepAtEnd != nil && j.keepAtEnd.pidfd >= 0
	j.stdout, j.stderr, j.index, note = newStreams(j.info.StdoutPath, j.info.StderrPath, j.info.IndexPath(),
		output.Options{RingSize: j.m.o.RingSize, FileCap: j.m.o.FileCap}, j.kept || later)
	if note != "" {
		j.info.Error = note
	}
}

// newStreams makes a job's output streams, files stdout and stderr, and
// the index of their arrival order (nil if it cannot be made); note says
// why a stream is in memory only (its file could not be made), "" none.
// A kept job's bytes are read from its files, as a held job's are (a
// holder may write them next): none in memory, and each mark in the
// index file before the bytes it marks (the holder goes on from it).
func newStreams(stdout, stderr, index string, o output.Options, kept bool) (out, errs *output.Stream, x *output.Interleave, note string) {
	o.NoRing = kept
	for _, s := range []struct {
		dst  **output.Stream
		path string
	}{{&out, stdout}, {&errs, stderr}} {
		st, err := output.Create(s.path, &o)
		if err != nil {
			note = err.Error() + " (output kept in memory only)"
			st, _ = output.Create("", &o)
		}
		*s.dst = st
	}
	// The arrival order of the two streams, for a merged view.
	if ix, err := output.NewInterleave(index, out, errs, 0); err == nil {
		if kept {
			ix.FlushEachMark()
		}
		x = ix
	}
	return out, errs, x, note
}

// prepare creates the pipes and the command (see command).
func (j *Job) prepare() (*exec.Cmd, *jobPipes, error) {
	path, argv, env, err := j.command(false)
	if err != nil {
		return nil, nil, err
	}
	return newCmd(path, argv, j.spec.Dir, env, j.spec.Stdin, j.m.devNull, j.m.pipes)
}

// command is what the job runs: the program's path, its argv and its
// environment (the policy shell's, with the job's marks), once its
// working directory is checked (checkDir; see dirErr). It reads only what does not change once
// the job exists (its spec and id), so it needs no lock, and it takes
// none: the look-up and the check touch the file system.
func (j *Job) command(checkDir bool) (path string, argv, env []string, err error) {
	m := j.m
	argv = j.spec.Argv
	if len(argv) == 0 {
		if m.o.Shell == nil {
			return "", nil, nil, m.shErr
		}
		argv = append(append([]string(nil), m.o.Shell...), j.spec.Cmd)
	}
	env = j.spec.Env
	if env == nil {
		env = os.Environ()
	}
	env = m.sh.Env(env) // copies only what must change
	if m.o.Owner != "" {
		// The job's own marks, last, and no others: a job started from
		// within another job (or a PTY shell) must not carry that one's.
		env = withMarks(env, EnvJobID+"="+j.info.ID, EnvJobOwner+"="+m.o.Owner)
	}
	if path, err = m.paths.lookPath(argv[0], env, j.spec.Dir); err != nil {
		return "", nil, nil, err
	}
	if checkDir {
		if err := j.dirErr(); err != nil {
			return "", nil, nil, err
		}
	}
	return path, argv, env, nil
}

// dirErr is what is wrong with the job's working directory, nil if
// nothing is. A job this process forks itself has it checked only if
// the fork fails (startError): the child's chdir is the check, and a stat
// on every start was one more system call between a request and its
// fork.
func (j *Job) dirErr() error {
	if j.spec.Dir == "" {
		return nil
	}
	if fi, err := os.Stat(j.spec.Dir); err != nil {
		return fmt.Errorf("cwd %q: %w", j.spec.Dir, err)
	} else if !fi.IsDir() {
		return fmt.Errorf("cwd %q: not a directory", j.spec.Dir)
	}
	return nil
}

// startError is the error of a start that failed (c.start's err): the
// working directory's, if it is what is wrong (see dirErr), else err.
func (j *Job) startError(err error) error {
	if derr := j.dirErr(); derr != nil {
		return derr
	}
	return fmt.Errorf("start: %w", err)
}

// newCmd creates a job's pipes (spare's, if it has them: nil makes
// them) and its command: stdin from stdin (or devNull when nil, or the
// null device when that is nil too), in a process group of its own.
func newCmd(path string, argv []string, dir string, env []string, stdin []byte, devNull *os.File, spare *pipeSpare) (*exec.Cmd, *jobPipes, error) {
	p, err := spare.take()
	if err != nil {
		return nil, nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Dir:         dir,
		Env:         env,
		Stdout:      p.outW,
		Stderr:      p.errW,
		SysProcAttr: sysProcAttr(),
		WaitDelay:   time.Second, // bounds the stdin copy if a grandchild holds stdin
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	} else if devNull != nil {
		cmd.Stdin = devNull // one open file for all jobs, not an open per job
	}
	return cmd, p, nil
}

// markVars are the environment variables hive marks its processes with.
var markVars = []string{EnvJobID + "=", EnvJobOwner + "=", "HIVE_PTY_ID="}

// withMarks is env without any mark variable, then marks. It copies env
// only when it must drop something.
func withMarks(env []string, marks ...string) []string {
	clean := env[:len(env):len(env)]
	for i, kv := range env {
		if hasMarkPrefix(kv) {
			clean = make([]string, 0, len(env)+len(marks))
			clean = append(clean, env[:i]...)
			for _, kv := range env[i+1:] {
				if !hasMarkPrefix(kv) {
					clean = append(clean, kv)
				}
			}
			break
		}
	}
	return append(clean, marks...)
}

func hasMarkPrefix(kv string) bool {
	for _, p := range markVars {
		if strings.HasPrefix(kv, p) {
			return true
		}
	}
	return false
}

// bulkPumps counts the pumps copying bulk output now (see BulkPumps);
// bulkHook, if set, is called after each change.
var (
	bulkPumps atomic.Int32
	bulkHook  atomic.Pointer[func()]
)

// OnBulkOutput sets f to be called each time the number of output pumps
// copying bulk output (BulkPumps) changes, from the pump that changed it.
// The holder of the jobs takes more processors while several pour.
func OnBulkOutput(f func()) { bulkHook.Store(&f) }

// BulkPumps is how many output pumps are copying bulk output on threads
// of their own now: streams that gave 64 KiB since they began or since
// they last gave nothing for bulkQuiet (at most max(4, 2 x CPUs); none
// where there is no such reader).
func BulkPumps() int { return int(bulkPumps.Load()) }

func bulkChanged(d int32) {
	bulkPumps.Add(d)
	if f := bulkHook.Load(); f != nil {
		(*f)()
	}
}

// pump copies a pipe into a stream until EOF, or until the supervisor
// stops it (pumper.stop): then it takes what the pipe still holds, without
// waiting, and returns. done is called once it has.
//
// A pump that waits in the runtime's poller holds no buffer: it takes
// one of its pool when there is something to read, and gives it back
// once it is written (pooledReader). A stream that pours keeps its
// buffer while it does. A pipe that gives nothing for pumpIdle is parked
// (parkRead, Linux): the pump's goroutine ends, and a new one goes on
// once the pipe has something to read or reaches its end, so an idle
// job's output costs no goroutine.
func pump(r *os.File, s io.Writer, done func()) *pumper {
	p := &pumper{r: r, s: s, done: done, pool: &smallBufPool, exited: make(chan struct{})}
	p.pooled = pooledReader(r)
	go p.run()
	return p
}

// pumpSpliced is pump for a job whose pipes another process reads on
// should this one die (a kept job's: its holder takes it over): where s
// takes them so (output.Stream.SpliceFrom: a stream that keeps no ring,
// Linux), the bytes go from the pipe into the file by splice(2), never
// through this process, so none is lost whenever it dies; else, or once
// s says no more (past the file's cap...), they are read and written.
func pumpSpliced(r *os.File, s io.Writer, done func()) *pumper {
	p := &pumper{r: r, s: s, done: done, pool: &smallBufPool, exited: make(chan struct{})}
	p.pooled = pooledReader(r)
	p.spliced = splicedReader(r, s)
	go p.run()
	return p
}

// pumpIdle is how long a pump waits in the poller for a pipe that gives
// nothing before it parks: a job quiet for longer holds no goroutine for
// its output until it writes again or ends.
const pumpIdle = 100 * time.Millisecond

// pumper is a pump's state, kept while it is parked.
type pumper struct {
	r      *os.File
	s      io.Writer
	done   func()
	pooled func(pool *sync.Pool, bp **[]byte) (int, error)
	// spliced, if set, moves what r holds into s's file (pumpSpliced);
	// nil once s takes no more so.
	spliced func() (int, error)

	pool           *sync.Pool
	total, quietAt int64 // quietAt: total when it last went quiet
	tuned          bool
	ownThread      bool // a spliced stream that pours: on a thread of its own

	stopped  atomic.Bool   // stop: take what is there and finish
	detached atomic.Bool   // detach: read no more, leave what is there
	parked   atomic.Uint32 // its parkRead token while parked, else 0
	exited   chan struct{} // closed once it has finished
}

// detach makes p read no more and finish, leaving what its pipe holds
// to another reader (a holder that takes the job over): it returns once
// p has finished, or after wait (a pump pouring on a thread of its own
// reads on until its read returns).
func (p *pumper) detach(wait time.Duration) bool {
	p.detached.Store(true)
	if p.r.SetReadDeadline(time.Now()) != nil {
		return false // no deadlines on this platform's pipes: it cannot be told
	}
	if t := p.parked.Load(); t != 0 {
		unpark(t)
	}
	select {
	case <-p.exited:
		return true
	case <-time.After(wait):
		return false
	}
}

// stop makes p take what its pipe holds, without waiting, and finish:
// the pipe's deadline is now, and a parked pump goes on at once.
func (p *pumper) stop() {
	p.stopped.Store(true)
	if p.r.SetReadDeadline(time.Now()) != nil {
		p.r.Close() // no deadlines on this platform's pipes
	}
	if t := p.parked.Load(); t != 0 {
		unpark(t)
	}
}

func (p *pumper) run() {
	var bp *[]byte // held while it reads, or while it pours
	var b *bulk    // while it pours
	finished := true
	defer func() {
		if bp != nil {
			p.pool.Put(bp)
		}
		b.leave()
		if finished {
			p.leaveThread()
			p.done()
			close(p.exited)
		}
	}()
	r := p.r
	for {
		if p.detached.Load() {
			return
		}
		var n int
		var err error
		idle, spliced := false, false
		switch {
		case b != nil:
			n, err = b.read(*bp)
		case p.spliced != nil:
			if parkable && !p.stopped.Load() {
				idle = r.SetReadDeadline(time.Now().Add(pumpIdle)) == nil
			}
			n, err = p.spliced()
			if errors.Is(err, output.ErrNoSplice) {
				p.spliced = nil // read and written from now on
				continue
			}
			spliced = true
		case p.pooled != nil:
			// A stopped pump keeps the deadline stop set; another waits
			// pumpIdle at most, then parks.
			if parkable && !p.stopped.Load() {
				idle = r.SetReadDeadline(time.Now().Add(pumpIdle)) == nil
			}
			n, err = p.pooled(p.pool, &bp)
		default:
			if bp == nil {
				bp = p.pool.Get().(*[]byte)
			}
			n, err = r.Read(*bp)
		}
		buf := []byte(nil)
		if bp != nil {
			buf = *bp
		}
		if n > 0 {
			if !spliced {
				p.s.Write(buf[:n])
			}
			p.total += int64(n)
			if b == nil && p.total-p.quietAt >= bulkOutput {
				// A job with this much output may have more: a larger
				// pipe lets it run ahead in bigger steps, and a thread of
				// its own may wait for it. Most jobs never get here and
				// keep the default pipe (no syscall spent on them).
				if !p.tuned {
					tunePipe(r)
					p.tuned = true
				}
				if spliced {
					// The kernel moves its bytes, and charges the thread
					// that asks: one of its own, not the one the
					// daemon's calls run on (the scheduler makes a thread
					// that ran much wait its turn, and a call answered
					// on it waited 100-300 ms behind four such streams).
					if !p.ownThread {
						if bulkThreads.Add(1) <= maxBulkThreads() {
							runtime.LockOSThread()
							p.ownThread = true
						} else {
							bulkThreads.Add(-1) // none free: the next chunk asks again
						}
					}
					continue
				}
				if idle {
					r.SetReadDeadline(time.Time{})
				}
				b = pour(r)
				if p.pool == &smallBufPool {
					p.pool.Put(bp)
					p.pool = &bufPool
					bp = p.pool.Get().(*[]byte)
				}
			}
		}
		if b == nil && p.pooled != nil && bp != nil {
			p.pool.Put(bp) // written: back to the pool until the next read
			bp = nil
		}
		if errors.Is(err, errQuiet) {
			b.leave()
			b, p.quietAt = nil, p.total
			continue
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if p.detached.Load() {
					return // what is left is the next reader's
				}
				if idle && !p.stopped.Load() {
					// Parked, it is idle: its buffer and its thread go
					// back first. Once parked the pump is the next
					// goroutine's, which may run at once: nothing of p
					// is this one's then (the deferred call touches none).
					if bp != nil {
						p.pool.Put(bp)
						bp = nil
					}
					b.leave()
					b = nil
					p.leaveThread()
					if p.park() {
						finished = false
						return
					}
				}
				if !p.stopped.Load() {
					continue // an idle deadline it could not park at: wait on
				}
				if p.spliced != nil && drainSpliced(r, p.s) {
					return
				}
				if bp == nil {
					bp = p.pool.Get().(*[]byte)
				}
				drainNow(r, p.s, *bp)
			}
			return
		}
	}
}

// leaveThread gives back the thread of its own a pump that poured had
// (see run), if it has one.
func (p *pumper) leaveThread() {
	if p.ownThread {
		p.ownThread = false
		runtime.UnlockOSThread()
		bulkThreads.Add(-1)
	}
}

// testBeforePark, set by a test, runs as an idle pump has decided to
// park, before it does.
var testBeforePark atomic.Pointer[func(*pumper)]

// park hands p's pipe to the parker (parkRead): true if it took it, and
// p.run goes on on a new goroutine when the pipe is readable or p is
// stopped. A stop that came while it parked resumes it at once. The
// pipe's deadline is left as it is: a stop's (now) must still hold when
// the pump goes on; an expired idle one is set anew then.
func (p *pumper) park() bool {
	if f := testBeforePark.Load(); f != nil {
		(*f)(p)
	}
	t, ok := parkRead(p.r, func() {
		p.parked.Store(0)
		p.run()
	})
	if !ok {
		return false
	}
	p.parked.Store(t)
	if p.stopped.Load() || p.detached.Load() {
		unpark(t)
	}
	return true
}

// bulkQuiet is how long a pouring stream may give nothing before its
// reader gives its thread back (errQuiet).
const bulkQuiet = 100 * time.Millisecond

// errQuiet is a pouring stream that gave nothing for bulkQuiet.
var errQuiet = errors.New("the stream went quiet")

// bulkThreads counts the pouring streams read on threads of their own,
// at most maxBulkThreads: past that they are read through the poller.
var bulkThreads atomic.Int32

func maxBulkThreads() int32 { return int32(max(4, 2*runtime.NumCPU())) }

// bulk is a stream that pours: read by a thread of its own (bulkReader)
// and counted in BulkPumps when a thread is free, else read as before.
type bulk struct {
	read   func([]byte) (int, error)
	locked bool
}

// pour gives r's stream, which pours, a thread of its own if one is free
// (then it counts in BulkPumps until it goes quiet); past that it stays
// in the poller, uncounted (the streams counted already take every
// processor).
func pour(r *os.File) *bulk {
	b := &bulk{read: r.Read}
	if bulkThreads.Add(1) <= maxBulkThreads() {
		if read := bulkReader(r); read != nil {
			runtime.LockOSThread()
			b.read, b.locked = read, true
			bulkChanged(1)
			return b
		}
	}
	bulkThreads.Add(-1)
	return b
}

// leave ends pour; a nil b is none.
func (b *bulk) leave() {
	if b == nil || !b.locked {
		return
	}
	runtime.UnlockOSThread()
	bulkThreads.Add(-1)
	bulkChanged(-1)
}

func (j *Job) closeStreams() {
	if j.index != nil {
		j.index.Close() // its marks first: a reader that sees the streams closed finds them all
	}
	if j.stdout != nil {
		j.stdout.Close()
		st := j.stdout.Stats()
		j.info.StdoutBytes, j.info.StdoutDropped = st.Total, st.Dropped
	}
	if j.stderr != nil {
		j.stderr.Close()
		st := j.stderr.Stats()
		j.info.StderrBytes, j.info.StderrDropped = st.Total, st.Dropped
	}
	// A file that failed (disk full, I/O error) is not "past the cap".
	for _, s := range []*output.Stream{j.stdout, j.stderr} {
		if s == nil {
			continue
		}
		if err := s.Err(); err != nil && !strings.Contains(j.info.Error, err.Error()) {
			if j.info.Error != "" {
				j.info.Error += "; "
			}
			j.info.Error += err.Error()
		}
	}
}

// finishLocked moves the job to its terminal state: once.
func (j *Job) finishLocked(s State) {
	if j.info.State.Terminal() {
		return
	}
	j.settleLocked(s)
	j.publishLocked()
}

// settleLocked is finishLocked's first half: the end in the job's info
// and its record queued. Nobody learns of it before publishLocked, but a
// view of the job under j.mu.
func (j *Job) settleLocked(s State) {
	j.info.State = s
	if j.info.Ended.IsZero() { // a holder tells when a held job ended
		j.info.Ended = time.Now()
	}
	if j.timeoutT != nil {
		j.timeoutT.Stop()
	}
	j.m.putLocked(j)
}

// publishLocked is finishLocked's second half: the job's waiters are
// told, and its streams let go of what they hold.
func (j *Job) publishLocked() {
	close(j.done)
	j.markStarted()
	if j.stdout != nil {
		j.stdout.Release()
	}
	if j.stderr != nil {
		j.stderr.Release()
	}
}

// compact shrinks the output an ended job keeps in memory (see
// output.Stream.Compact).
func (j *Job) compact() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, s := range []*output.Stream{j.stdout, j.stderr} {
		if s != nil {
			s.Compact()
		}
	}
}

// release frees what an ended job holds.
func (j *Job) release() {
	if j.stdout != nil {
		j.stdout.Release()
	}
	if j.stderr != nil {
		j.stderr.Release()
	}
}

// stop signals the job's group; see Manager.Kill.
func (j *Job) stop(reason State, force bool) (Info, error) {
	return j.stopWithin(reason, force, j.m.o.Grace, "")
}

// stopWithin is stop with the time between SIGINT and SIGKILL, and a
// note for Info.Error (when it has none) saying why it was stopped. A
// held job's stop goes to its holder without j.mu held.
func (j *Job) stopWithin(reason State, force bool, grace time.Duration, note string) (Info, error) {
	j.mu.Lock()
	if j.info.State.Terminal() {
		defer j.mu.Unlock()
		return j.snapshotLocked(), ErrEnded
	}
	if j.reason == "" {
		j.reason = reason
	}
	if note != "" && j.info.Error == "" {
		j.info.Error = note
	}
	// The first stop's grace, SIGKILL if any stop forces: what begin
	// applies to a process whose start was in flight, and what a keep
	// made meanwhile tells its holder (keepLate).
	if j.stopGrace == 0 {
		j.stopGrace = grace
	}
	j.stopForce = j.stopForce || force
	if j.info.State == Pending {
		// begin sees the reason before starting, or, if its start is in
		// flight, stops the process once it has started.
		defer j.mu.Unlock()
		return j.snapshotLocked(), nil
	}
	in := j.snapshotLocked()
	c, held, kept := j.child, j.held, j.kept
	j.mu.Unlock()
	switch {
	case c != nil:
		j.stopChild(c, kept, force, grace)
	case held:
		return in, j.stopHeld(force, grace)
	}
	return in, nil
}
