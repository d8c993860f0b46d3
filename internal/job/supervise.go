package job

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
)

// drainQuiet is how long the output readers may take to reach EOF after
// the job's group is gone; a process that escaped the group (setsid) and
// holds a pipe open then cannot delay completion by more.
const drainQuiet = 200 * time.Millisecond

// bulkOutput is the output after which a job's pipe is grown.
const bulkOutput = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// begin starts the job's process. It returns the rest of the job's life
// (wait, clean up, record), to run on the goroutine that owns the child, or
// nil if the job ended without running (cancelled, or failed to start).
func (j *Job) begin() func() {
	m := j.m
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.info.State.Terminal() {
		return nil
	}
	if j.reason != "" { // stopped between dispatch and start
		j.info.Error = "cancelled before it started"
		j.finishLocked(j.reason)
		return nil
	}
	cmd, pipes, err := j.prepareLocked()
	if err == nil {
		err = proc.Start(cmd) // the reaper (if any) leaves its status to watch
		pipes.closeChildEnds()
		if err != nil {
			err = fmt.Errorf("start: %w", err)
		}
	}
	if err != nil {
		pipes.closeAll()
		j.info.Error = err.Error()
		j.finishLocked(Failed)
		return nil
	}
	pid := cmd.Process.Pid
	j.pgid = pid
	j.info.Pid = pid
	if j.detached {
		// Its id is handed out once the record is stored: the record
		// must carry what a restarted daemon needs to find the group.
		// An attached job's start time is read only if its record is
		// written while it runs (most end before: see fillPidStart).
		j.info.PidStart = procStartTime(pid)
		j.pidStart.Store(j.info.PidStart)
	} else if m.o.Owner != "" && proc.Supported {
		// What proves a process that left the group to be this job's
		// (see sweepEscapes) includes starting after its leader.
		j.pidStart.Store(procStartTime(pid))
	}
	j.info.State = Running
	j.info.Started = time.Now()
	if j.spec.Timeout > 0 {
		j.timeoutT = time.AfterFunc(j.spec.Timeout, func() { j.stop(TimedOut, j.spec.KillOnTimeout) })
	}
	m.putLocked(j)
	return func() { j.watch(cmd, pipes) }
}

// watch is the one goroutine that waits on the child: it pumps output,
// waits, cleans up the group and records the end.
func (j *Job) watch(cmd *exec.Cmd, pipes *jobPipes) {
	m := j.m
	pid := cmd.Process.Pid
	// The output files are created while the child already runs (its
	// output waits in the pipes): file creation stays off the start path.
	j.mu.Lock()
	j.createStreamsLocked()
	j.mu.Unlock()
	j.markStarted()
	pumped := make(chan struct{}, 2)
	outW, errW := io.Writer(j.stdout), io.Writer(j.stderr)
	if j.index != nil {
		outW, errW = j.index.Writer(0), j.index.Writer(1)
	}
	go func() { pump(pipes.outR, outW); pumped <- struct{}{} }()
	go func() { pump(pipes.errR, errW); pumped <- struct{}{} }()

	waitErr := proc.Wait(cmd)
	j.reaped.Store(true)
	code, sig := exitStatus(cmd.ProcessState)
	// The leader is reaped: from now on its pid may be reused, so stop()
	// and the timers must not signal it. What is left of the group is
	// cleaned up here (a pid that is still some group's id is never reused).
	j.mu.Lock()
	j.pgid = 0
	// What is left of a stopped job's group gets what is left of the
	// stop's grace (none after a forced stop), not a fresh one: kill ends
	// the job within its grace period.
	grace := m.o.LeftoverGrace
	if !j.stopAt.IsZero() {
		grace = min(grace, max(time.Until(j.stopAt.Add(j.stopGrace)), 0))
		if j.forced {
			grace = 0
		}
	}
	j.mu.Unlock()
	leftover := cleanupGroup(pid, grace)
	leftover += j.sweepEscapes(pid, grace, leftover > 0)
	// Every process of the group is gone, so all the job wrote is in the
	// pipes or already read. Normally the readers reach EOF at once. If
	// not, something that left the group holds a pipe open: after a short
	// grace the readers take what the pipes hold and stop, so it cannot
	// delay the job's end.
	if len(pumped) < 2 { // usually both readers are done already: no timer
		grace := time.NewTimer(drainQuiet)
		for got := 0; got < 2; {
			select {
			case <-pumped:
				got++
			case <-grace.C:
				for _, r := range []*os.File{pipes.outR, pipes.errR} {
					if r.SetReadDeadline(time.Now()) != nil {
						r.Close() // no deadlines on this platform's pipes
					}
				}
				for ; got < 2; got++ {
					<-pumped
				}
			}
		}
		grace.Stop()
	}
	pipes.closeAll()

	j.mu.Lock()
	defer j.mu.Unlock()
	j.closeStreams()
	if cmd.ProcessState != nil {
		j.info.ExitCode = &code
		j.info.Signal = sig
	} else if waitErr != nil {
		j.info.Error = waitErr.Error()
	}
	j.info.Leftover = leftover
	end := Done
	if j.reason != "" {
		end = j.reason
	}
	j.finishLocked(end)
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
	so := &output.Options{RingSize: j.m.o.RingSize, FileCap: j.m.o.FileCap}
	for _, s := range []struct {
		dst  **output.Stream
		path string
	}{{&j.stdout, j.info.StdoutPath}, {&j.stderr, j.info.StderrPath}} {
		st, err := output.Create(s.path, so)
		if err != nil {
			j.info.Error = err.Error() + " (output kept in memory only)"
			st, _ = output.Create("", so)
		}
		*s.dst = st
	}
	// The arrival order of the two streams, for a merged view.
	if x, err := output.NewInterleave(j.info.IndexPath(), j.stdout, j.stderr, 0); err == nil {
		j.index = x
	}
}

// prepareLocked creates the pipes and the command.
func (j *Job) prepareLocked() (*exec.Cmd, *jobPipes, error) {
	m := j.m
	var err error
	argv := j.spec.Argv
	if len(argv) == 0 {
		if m.o.Shell == nil {
			return nil, nil, m.shErr
		}
		argv = append(append([]string(nil), m.o.Shell...), j.spec.Cmd)
	}
	env := j.spec.Env
	if env == nil {
		env = os.Environ()
	}
	env = m.sh.Env(env) // copies only what must change
	if m.o.Owner != "" {
		// The job's own marks, last, and no others: a job started from
		// within another job (or a PTY shell) must not carry that one's.
		env = withMarks(env, EnvJobID+"="+j.info.ID, EnvJobOwner+"="+m.o.Owner)
	}
	path, err := m.paths.lookPath(argv[0], env, j.spec.Dir)
	if err != nil {
		return nil, nil, err
	}
	if j.spec.Dir != "" {
		if fi, err := os.Stat(j.spec.Dir); err != nil {
			return nil, nil, fmt.Errorf("cwd %q: %w", j.spec.Dir, err)
		} else if !fi.IsDir() {
			return nil, nil, fmt.Errorf("cwd %q: not a directory", j.spec.Dir)
		}
	}
	p := &jobPipes{}
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Dir:         j.spec.Dir,
		Env:         env,
		Stdout:      p.outW,
		Stderr:      p.errW,
		SysProcAttr: sysProcAttr(),
		WaitDelay:   time.Second, // bounds the stdin copy if a grandchild holds stdin
	}
	if j.spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(j.spec.Stdin)
	} else if m.devNull != nil {
		cmd.Stdin = m.devNull // one open file for all jobs, not an open per job
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

// pump copies a pipe into a stream until EOF, or until the supervisor
// sets a deadline: then it takes what the pipe still holds, without
// waiting, and returns.
func pump(r *os.File, s io.Writer) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.Write(buf[:n])
			if total < bulkOutput && total+int64(n) >= bulkOutput {
				// A job with this much output may have more: a larger
				// pipe lets it run ahead in bigger steps. Most jobs never
				// get here and keep the default pipe (no syscall spent
				// on them).
				tunePipe(r)
			}
			total += int64(n)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				drainNow(r, s, buf)
			}
			return
		}
	}
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
	j.info.State = s
	j.info.Ended = time.Now()
	if j.timeoutT != nil {
		j.timeoutT.Stop()
	}
	if j.graceT != nil {
		j.graceT.Stop()
	}
	j.m.putLocked(j)
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
// note for Info.Error (when it has none) saying why it was stopped.
func (j *Job) stopWithin(reason State, force bool, grace time.Duration, note string) (Info, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.info.State.Terminal() {
		return j.snapshotLocked(), ErrEnded
	}
	if j.reason == "" {
		j.reason = reason
	}
	if j.stopAt.IsZero() {
		j.stopAt = time.Now()
		j.stopGrace = grace
	}
	if note != "" && j.info.Error == "" {
		j.info.Error = note
	}
	j.forced = j.forced || force
	if j.info.State == Pending {
		return j.snapshotLocked(), nil // supervise sees the reason before starting
	}
	if force {
		signalGroup(j.pgid, sigKill)
		return j.snapshotLocked(), nil
	}
	signalGroup(j.pgid, sigInt)
	if j.graceT == nil {
		j.graceT = time.AfterFunc(j.stopGrace, func() {
			j.mu.Lock()
			defer j.mu.Unlock()
			if !j.info.State.Terminal() {
				signalGroup(j.pgid, sigKill)
			}
		})
	}
	return j.snapshotLocked(), nil
}
