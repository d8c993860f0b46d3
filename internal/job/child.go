package job

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proc"
)

// child is a job's process as its parent holds it: the pipes it writes,
// the signals that stop it, the wait for its end and the clean-up of what
// it leaves. The parent is the daemon (a Manager without a Holder) or the
// holder of the jobs (see Held); the rest of a job's life (its record,
// its loose end) is the Manager's either way.
type child struct {
	id, owner string // the job's marks (see withMarks); owner "" = none
	reaper    *proc.Reaper
	reapedAt  int64            // the reaper's count of reaped adopted processes at the start
	cgroups   *proc.JobCgroups // nil: the job gets no cgroup
	leftover  time.Duration    // the grace of what is left after the leader (LeftoverGrace)
	logger    *slog.Logger
	// limits are the job's, and timeout its timeout (a CPU time rlimit
	// is made of it); by is how start enforced them.
	limits  limits.Limits
	timeout time.Duration
	by      limits.Enforced

	cmd   *exec.Cmd
	pipes *jobPipes
	pid   int
	// started is its leader's start time (proc.Stat.Start) as start
	// knew it, 0 if not known (procStartTime reads it).
	started uint64
	// release, for a job its holder keeps too (beginKept): closed when
	// the manager lets the job go to the holder (Manager.Release); run
	// then returns at once, its pumps detached (releasePumps).
	release chan struct{}
	// waited, if set, is called once its leader is reaped or it is let
	// go (run), before its end is recorded.
	waited func()
	// onReaped, if set, is called once the leader is reaped (or found
	// ended), before run closes the pipes (Job.keepSettled).
	onReaped func()
	// ended: its leader had exited when the fork returned (a job kept
	// at its end): run reads its pipes at once, pumps only what is left,
	// and reaps it without looking for its exit again.
	ended    bool
	pumps    []*pumper // run's, under mu
	released bool      // under mu: no pump starts from now on
	// killedBy, if set, tells whether the job's cgroup (one its holder
	// lent, and watches) was written cgroup.kill (see JobCgroups.Killed).
	killedBy func(wait time.Duration) (bool, error)
	// slot is the cgroup its holder lent it (a kept job's), "" none.
	slot string
	// pidStart is the leader's start time once read, reaped set once it
	// has been waited for (its pid may then name another process).
	pidStart *atomic.Uint64
	reaped   *atomic.Bool

	stops
}

// stops is how a job's process is asked to stop: SIGINT to its group,
// SIGKILL once the first stop's grace is over, SIGKILL at once with force
// (child and taken).
type stops struct {
	mu        sync.Mutex
	pgid      int       // 0 once the leader is reaped: nothing to signal
	stopAt    time.Time // when it was first asked to stop
	stopGrace time.Duration
	forced    bool
	graceT    *time.Timer
	// reapedNow, if set, tells whether the leader has been reaped by
	// another process than this one (a taken job's): its group is then
	// not signalled, its pid may name another process.
	reapedNow func() bool
}

// stop signals the group: SIGINT, then SIGKILL once the grace of the
// first stop is over; SIGKILL at once with force. Only the first stop
// sets the grace: a later one cannot extend it.
func (s *stops) stop(force bool, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopAt.IsZero() {
		s.stopAt = time.Now()
		s.stopGrace = grace
	}
	s.forced = s.forced || force
	if force {
		s.signalLocked(sigKill)
		return
	}
	s.signalLocked(sigInt)
	s.killAfterLocked(s.stopGrace)
}

// killAfterLocked sends SIGKILL once d is over (the first call's d).
func (s *stops) killAfterLocked(d time.Duration) {
	if s.graceT == nil {
		s.graceT = time.AfterFunc(d, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.signalLocked(sigKill) // no-op once reaped
		})
	}
}

// goOnStopping goes on with a stop begun at at by another process (see
// HeldProc.GoOnStopping): it is this one's first stop, at and grace its
// time and grace; SIGKILL comes once that grace is over, at once if
// forced or over already. A stop asked here before stays as it was, but
// for force.
func (s *stops) goOnStopping(at time.Time, force bool, grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopAt.IsZero() {
		s.stopAt, s.stopGrace = at, grace
	}
	s.forced = s.forced || force
	left := time.Until(s.stopAt.Add(s.stopGrace))
	if s.forced || left <= 0 {
		s.signalLocked(sigKill)
		return
	}
	s.killAfterLocked(left)
}

func (s *stops) signalLocked(sig jobSignal) {
	if s.pgid != 0 && s.reapedNow != nil && s.reapedNow() {
		s.pgid = 0
	}
	signalGroup(s.pgid, sig)
}

// stopped reports whether the process was asked to stop.
func (s *stops) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.stopAt.IsZero()
}

// reaped is told that the leader is reaped: from now on its pid may be
// reused, so stop and the timers must not signal it. It returns the grace
// of what is left of the group: what is left of a stopped job's grace
// (none after a forced stop), not a fresh one, so that a kill ends the
// job within its grace period.
func (s *stops) reaped(leftover time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pgid = 0
	if s.graceT != nil {
		s.graceT.Stop()
	}
	grace := leftover
	if !s.stopAt.IsZero() {
		grace = min(grace, max(time.Until(s.stopAt.Add(s.stopGrace)), 0))
		if s.forced {
			grace = 0
		}
	}
	return grace
}

// start starts the process, in a cgroup of its own with cgroups (one
// that cannot be made is logged, and the job runs without), under its
// limits: those its cgroup takes are set on it, the others are rlimits
// (limits.Split, limits.Wrap, which also puts it in its cgroup v1 ones,
// if any). The pipes' child ends are closed either way.
func (c *child) start() error {
	c.reapedAt = c.reaper.Reaped()
	var release func()
	var set limits.Enforced
	var join []string // cgroup v1 ones: the process joins them itself (limits.Wrap)
	if c.cgroups != nil {
		var err error
		if release, err = c.cgroups.Prepare(c.id, c.cmd); err != nil {
			c.logger.Warn("a job runs without a cgroup of its own", "job", c.id, "err", err)
		} else {
			set, join = c.cgroups.SetLimits(c.id, c.limits)
		}
	}
	var r limits.Rlimits
	r, c.by = limits.Split(c.limits, set, c.timeout)
	if (!r.IsZero() || len(join) > 0) && r.Nofile == 0 {
		r.NofileSoft = childNofile()
	}
	limits.Wrap(c.cmd, r, join...)
	started, err := proc.StartTimed(c.cmd) // the reaper (if any) leaves its status to the wait
	if release != nil {
		release()
		if err != nil {
			c.cgroups.End(c.id, 0, false)
		}
	}
	c.pipes.closeChildEnds()
	if err != nil {
		c.pipes.closeAll()
		return err
	}
	c.pid, c.started = c.cmd.Process.Pid, started
	if err := attachTree(c.pid); err != nil {
		c.logger.Warn("a job's process is in no job object: a stop ends its tree by taskkill", "job", c.id, "err", err)
	}
	c.mu.Lock()
	c.pgid = c.pid
	c.mu.Unlock()
	return nil
}

// childEnd is how a child ended.
type childEnd struct {
	exited   bool // the leader's status is known: code and sig
	code     int
	sig      *int
	err      error  // the wait's error, when the status is not known
	leftover int    // processes left in its group and outside it, terminated
	note     string // why it ended, when hive did not end it: CgroupKilled
	usage    limits.Usage
	hit      string // the limit that ended or held it back (limits.Hit)
	released bool   // let go to the holder before it ended: nothing else is known
	// holderLost: killed by a SIGKILL hive did not send while the holder
	// that keeps it could not be asked (it died: its guard ends its jobs).
	holderLost bool
}

// CgroupKilled is the note (Info.Error) of a job whose cgroup, or one
// above it, was written cgroup.kill by something other than hive (one of
// its processes, another job, a user): its leader died of a SIGKILL that
// hive did not send.
const CgroupKilled = "its cgroup was killed from outside hive (a write to cgroup.kill)"

// cgroupKilledWait is how long a job killed by a SIGKILL that hive did
// not send waits for the write to cgroup.kill that may have sent it to
// be seen (proc.JobCgroups.Killed): it is seen once the write returns,
// a moment after the kill.
const cgroupKilledWait = 100 * time.Millisecond

// run pumps the pipes into out and errw, waits for the leader, ends what
// it left and returns once both pipes are drained. It is the one
// goroutine that waits on the child.
func (c *child) run(out, errw io.Writer) childEnd {
	pipes := c.pipes
	pumped := make(chan struct{}, 2)
	done := func() { pumped <- struct{}{} }
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		go c.reapReleased(nil) // let go before it was waited for
		c.done()
		return childEnd{released: true}
	}
	mk := pump
	if c.release != nil {
		mk = pumpSpliced // its holder reads on should this process die
	}
	var pumps []*pumper
	for _, p := range []struct {
		r *os.File
		w io.Writer
	}{{pipes.outR, out}, {pipes.errR, errw}} {
		// A leader that ended before its fork returned wrote all it did
		// into the pipes, which end with it unless something it left
		// holds them: read now, on this goroutine; a pump (a goroutine,
		// its deadline's timer, its wake-ups) only for a pipe that does
		// not end so.
		if c.ended && readToEnd(p.r, p.w) {
			done()
			continue
		}
		pumps = append(pumps, mk(p.r, p.w, done))
	}
	c.pumps = pumps
	c.mu.Unlock()

	waitErr, released := c.wait()
	c.done()
	if released {
		return childEnd{released: true}
	}
	if c.onReaped != nil {
		c.onReaped()
	}
	c.reaped.Store(true)
	var e childEnd
	if c.cmd.ProcessState != nil {
		e.exited = true
		e.code, e.sig = exitStatus(c.cmd.ProcessState)
	} else {
		e.err = waitErr
	}
	if e.sig != nil && *e.sig == int(sigKill) && !c.stopped() && !c.oomKilled() {
		killed, err := c.killed(cgroupKilledWait)
		switch {
		case err != nil:
			e.holderLost = true // its holder, which lent its cgroup, is gone: its guard killed it
		case killed:
			e.note = CgroupKilled
		}
	}
	// The leader is reaped. What is left of the group is cleaned up here
	// (a pid that is still some group's id is never reused).
	grace := c.stops.reaped(c.leftover)
	e.leftover = cleanupGroup(c.pid, grace)
	escaped, orphans := c.sweepEscapes(c.pid, grace, e.leftover > 0)
	e.leftover += escaped
	// The rusage of the leader counts all it waited for; a process it did
	// not (adopted by the reaper meanwhile, maybe another job's; or left
	// at the end) is counted only by the cgroup's cpu.stat.
	e.usage = c.usage(e.leftover > 0 || orphans || c.reaper.Reaped() != c.reapedAt)
	e.hit, _ = limits.Hit(c.limits, e.usage, e.sig != nil && *e.sig == sigXCPU)
	// What is still in its cgroup left the group and has no marks (an
	// `env -i` escape): with the marks' ones gone, usually nothing. The
	// cgroup is looked at only if something may be left (orphans).
	n := c.cgroups.End(c.id, grace, orphans)
	if c.slot != "" && orphans {
		n += proc.EndCgroup(c.slot, grace) // its holder's, lent: the holder removes it after the ack
	}
	if n > 0 {
		c.logger.Info("terminated processes left in a job's cgroup", "job", c.id, "count", n)
		e.leftover += n
	}
	drainPumps(pumped, pumps)
	pipes.closeAll()
	return e
}

// done calls waited, if set.
func (c *child) done() {
	if c.waited != nil {
		c.waited()
	}
}

// drainPumps returns once both pumps are done. Every process of the job's
// group is gone by then, so all the job wrote is in the pipes or already
// read. Normally the readers reach EOF at once. If not, something that
// left the group holds a pipe open: after a short grace the readers take
// what the pipes hold and stop, so it cannot delay the job's end.
func drainPumps(pumped chan struct{}, pumps []*pumper) {
	if len(pumped) >= 2 { // usually both readers are done already: no timer
		return
	}
	t := time.NewTimer(drainQuiet)
	defer t.Stop()
	for got := 0; got < 2; {
		select {
		case <-pumped:
			got++
		case <-t.C:
			for _, p := range pumps {
				p.stop()
			}
			for ; got < 2; got++ {
				<-pumped
			}
		}
	}
}

// wait waits for the leader (proc.Wait), or, for a job that may be let
// go (release), until it is: the wait goes on on a goroutine of its own
// then, until the leader exits (the daemon exits meanwhile).
func (c *child) wait() (err error, released bool) {
	if c.ended || c.release != nil && proc.Exited(c.pid) {
		// A leader that has exited already (beginKept saw it, or now) is
		// reaped here, without a goroutine for the wait: a release would
		// find it ended.
		return proc.WaitExited(c.cmd), false
	}
	if c.release == nil {
		return proc.Wait(c.cmd), false
	}
	waited := make(chan error, 1)
	go func() { waited <- proc.Wait(c.cmd) }()
	select {
	case err := <-waited:
		return err, false
	case <-c.release:
		go c.reapReleased(waited)
		return nil, true
	}
}

// reapReleased reaps the leader of a job let go to its holder (Release)
// once it exits, then closes this process's ends of its pipes (the
// holder reads its own). The leader is still this process's child: a
// process that lives on after a release (a test; a daemon whose exit is
// slow) must reap it, or it stays a zombie, and the holder, which learns
// its exit status from its pidfd only once it is reaped, ends it without
// one (taken.wait). waited, if set, is a wait already under way.
func (c *child) reapReleased(waited <-chan error) {
	if waited == nil {
		proc.Wait(c.cmd)
	} else {
		<-waited
	}
	c.pipes.closeAll()
}

// releasePumps detaches the pumps (and keeps run from starting any):
// what the pipes hold from now on is the holder's to read. It reports
// whether they finished within wait.
func (c *child) releasePumps(wait time.Duration) bool {
	c.mu.Lock()
	c.released = true
	pumps := c.pumps
	c.mu.Unlock()
	ok := true
	for _, p := range pumps {
		ok = p.detach(wait) && ok
	}
	return ok
}

// killed reports whether the job's cgroup, or one above it, was written
// cgroup.kill from outside hive (JobCgroups.Killed, or its holder's).
func (c *child) killed(wait time.Duration) (bool, error) {
	if c.killedBy != nil {
		return c.killedBy(wait)
	}
	return c.cgroups.Killed(c.id, wait), nil
}

// oomKilled reports whether the memory limit killed a process of the
// job's (its cgroup's memory.events): then a SIGKILL of its leader is
// the kernel's, no write to a cgroup.kill.
func (c *child) oomKilled() bool {
	u, ok := c.cgroups.Usage(c.id)
	return ok && u.OOMKills > 0
}

// usage is what the job used, once its leader is reaped: the leader's
// rusage (the processor time of all it waited for), with what its
// cgroups tell more (proc.JobCgroups.EndUsage: the memory peak of all its
// processes together where the memory controller is on, the kills and
// refused forks; and the processor time of all its processes and the
// throttled periods if strays, processes its leader did not wait for,
// may have run, or it had a CPU limit).
func (c *child) usage(strays bool) limits.Usage {
	ru := rusageOf(c.cmd.ProcessState)
	u, cpuRead, ok := c.cgroups.EndUsage(c.id, strays || c.limits.CPUs > 0)
	if !ok {
		return ru
	}
	if !cpuRead {
		u.CPUUserMS, u.CPUSystemMS = ru.CPUUserMS, ru.CPUSystemMS
	}
	if u.MemoryPeakBytes == 0 {
		u.MemoryPeakBytes = ru.MemoryPeakBytes
	}
	u.MemoryBytes = 0
	return u
}

// startTime is its leader's start time: as start knew it, else from /proc
// (0 if it is gone).
func (c *child) startTime() uint64 {
	if c.started != 0 {
		return c.started
	}
	return procStartTime(c.pid)
}
