package job

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
)

// TakeHeld makes a held job of a process the holder did not start: one
// a daemon started and pumped itself, whose pumping and waiting the
// holder takes over once that daemon is gone or lets it go
// (docs/architecture.md, "the daemon forks, the holder keeps"). pidfd
// refers to its leader, outR and errR are read ends of its output pipes
// (duplicates of the daemon's); the descriptors are the HeldProc's from
// now on, closed by Wait. at are the streams' counts as the daemon last
// had them (zero values: what the files hold): the stream files and the
// index go on where it left them. endCgroup, if set, ends what is left in
// the job's cgroup once its leader has gone and returns how many
// processes that was.
//
// The leader is not the holder's child: its exit status comes from its
// pidfd once its parent (the daemon, or init or a subreaper above it
// after the daemon died) has reaped it (proc.PidfdExit), and a kernel
// that cannot tell it leaves the end without one. wrote is as RunHeld's.
func TakeHeld(spec wire.JobSpec, start wire.JobStart, pidfd, outR, errR int, at [2]output.Stats, endCgroup func(grace time.Duration) int, logger *slog.Logger, wrote func()) (*HeldProc, error) {
	fds := []int{pidfd, outR, errR}
	fail := func(err error) (*HeldProc, error) {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, err
	}
	if spec.ID == "" || spec.Stdout == "" || spec.Stderr == "" || start.Pid <= 0 {
		return fail(errors.New("take: id, stdout, stderr and the leader's pid are required"))
	}
	if pidfd < 0 || outR < 0 || errR < 0 {
		return fail(errors.New("take: the leader's pidfd and both pipes are required"))
	}
	// Each in the runtime's poller (non-blocking): the pumps' reads take
	// deadlines, and the wait for the leader is a wait for readiness.
	for _, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			return fail(fmt.Errorf("take: %w", err))
		}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if spec.LeftoverGrace <= 0 {
		spec.LeftoverGrace = 2 * time.Second
	}
	spec.Env, spec.Argv, spec.Path, spec.Stdin = nil, nil, "", nil
	h := &HeldProc{Spec: spec, Start: start, wrote: wrote}
	h.openStreams(logger, &at)
	t := &taken{id: spec.ID, owner: spec.Owner, pid: start.Pid, pidStart: start.PidStart,
		leftover: spec.LeftoverGrace, logger: logger, endCgroup: endCgroup, reaped: &h.reaped,
		pidfd: os.NewFile(uintptr(pidfd), "pidfd"),
		pipes: &jobPipes{outR: os.NewFile(uintptr(outR), "stdout"), errR: os.NewFile(uintptr(errR), "stderr")}}
	t.pgid, t.stops.reapedNow = start.Pid, t.reapedNow
	h.pidStart.Store(start.PidStart)
	h.r = t
	return h, nil
}

// reapRaceTries bounds the looks, a millisecond apart, for the exit of a
// leader whose pidfd says it is reaped but tells no exit yet.
const reapRaceTries = 100

// reapWait bounds the wait for a taken job's leader to be reaped once it
// has exited: a parent that never reaps (a subreaper that does not)
// leaves the end without an exit status, not the job running forever.
const reapWait = 10 * time.Second

// taken is a process the holder took over (TakeHeld): the pipes' read
// ends, a pidfd of its leader, and what a child keeps to stop it and
// clean up after it.
type taken struct {
	id, owner string
	pid       int
	pidStart  uint64
	leftover  time.Duration
	logger    *slog.Logger
	endCgroup func(grace time.Duration) int
	reaped    *atomic.Bool
	pidfd     *os.File
	pipes     *jobPipes

	// stops signals its group while its leader is not reaped (asked of
	// the pidfd first: another process reaps it), never after.
	stops
}

// reapedNow tells whether the leader has been reaped (by its parent).
func (t *taken) reapedNow() bool {
	reaped := false
	if rc, err := t.pidfd.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { _, reaped, _ = proc.PidfdExit(int(fd)) })
	}
	return reaped
}

// wait returns the leader's exit status once it has been reaped: its
// pidfd is readable at its exit and again at its reap.
func (t *taken) wait() (syscall.WaitStatus, error) {
	rc, err := t.pidfd.SyscallConn()
	if err != nil {
		return 0, err
	}
	var ws syscall.WaitStatus
	var werr error
	zombie := false
	err = rc.Read(func(fd uintptr) bool {
		var reaped bool
		ws, reaped, werr = proc.PidfdExit(int(fd))
		for i := 0; i < reapRaceTries && errors.Is(werr, unix.ESRCH); i++ {
			// Reaped this instant, its exit not stored yet (the reap
			// unhashes the process a moment before it stores the exit):
			// a kernel that keeps a job (proc.PidfdExit worked when the
			// holder started) has it within microseconds.
			time.Sleep(time.Millisecond)
			ws, reaped, werr = proc.PidfdExit(int(fd))
		}
		if reaped || werr != nil {
			return true
		}
		if !zombie && proc.PidfdExited(int(fd)) {
			zombie = true // exited, its parent has yet to reap it
			t.pidfd.SetReadDeadline(time.Now().Add(reapWait))
		}
		return false
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, fmt.Errorf("its exit status is not known: its leader (pid %d) exited, and its parent did not reap it within %v", t.pid, reapWait)
	case err != nil:
		return 0, err
	case errors.Is(werr, errors.ErrUnsupported):
		return 0, errors.New("its exit status is not known: this kernel does not tell it to the holder (Linux 6.15 does)")
	}
	return ws, werr
}

func (t *taken) run(out, errw io.Writer) childEnd {
	pumped := make(chan struct{}, 2)
	done := func() { pumped <- struct{}{} }
	pumps := []*pumper{pump(t.pipes.outR, out, done), pump(t.pipes.errR, errw, done)}
	var e childEnd
	ws, err := t.wait()
	t.reaped.Store(true)
	if err != nil {
		e.err = err
	} else {
		e.exited = true
		if ws.Signaled() {
			n := int(ws.Signal())
			e.code, e.sig = 128+n, &n
		} else {
			e.code = ws.ExitStatus()
		}
	}
	grace := t.stops.reaped(t.leftover)
	// What is left: its group (a group id that some process still has is
	// never another's), what left the group carrying its marks (not this
	// process's to reap: init's or a subreaper's), and its cgroup.
	e.leftover = cleanupGroup(t.pid, grace)
	if t.owner != "" && t.pidStart != 0 {
		e.leftover += terminateEscapees(t.id, t.owner, t.pidStart, t.pid, grace)
	}
	if t.endCgroup != nil {
		e.leftover += t.endCgroup(grace)
	}
	drainPumps(pumped, pumps)
	t.pipes.closeAll()
	t.pidfd.Close()
	return e
}

// keepSupported: a holder can keep the jobs a manager starts (TakeHeld).
const keepSupported = true

// startInto sets cmd to start in the cgroup at slot (its path; "" none)
// and to make a pidfd of its leader into *pidfd. release closes the
// cgroup's descriptor once cmd has started.
func startInto(cmd *exec.Cmd, slot string, pidfd *int) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	*pidfd = -1
	cmd.SysProcAttr.PidFD = pidfd
	release = func() {}
	if slot == "" {
		return release, nil
	}
	fd, err := unix.Open(slot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return release, err
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	return func() { unix.Close(fd) }, nil
}

// fdOf is f's descriptor, without taking it out of the poller.
func fdOf(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(x uintptr) { fd = int(x) })
	}
	return fd
}

func closeFD(fd int) { unix.Close(fd) }
