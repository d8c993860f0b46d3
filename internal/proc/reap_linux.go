package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// gate orders the start of direct children against the reaper's passes:
// a start holds it shared from the fork until its pid is registered, a
// pass exclusively, so a pass never sees a direct child it does not know.
var (
	gate sync.RWMutex
	// direct holds the children started by Start and not yet waited for.
	direct   = map[int]struct{}{}
	directMu sync.Mutex  // guards direct
	running  atomic.Bool // a Reaper runs
)

func start(cmd *exec.Cmd) error {
	gate.RLock()
	defer gate.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	directMu.Lock()
	direct[cmd.Process.Pid] = struct{}{}
	directMu.Unlock()
	return nil
}

func forget(pid int) {
	directMu.Lock()
	delete(direct, pid)
	directMu.Unlock()
}

// Reaper makes the current process a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process that leaves the tree of one of its
// children (setsid, a double fork, nohup … &) is reparented to it instead
// of to init. The reaper reaps those adopted processes when they exit,
// on every SIGCHLD and whenever Reap is called, and never a child started
// with Start: that one's status stays its waiter's. At most one Reaper
// runs at a time in a process.
type Reaper struct {
	sigs   chan os.Signal
	done   chan struct{}
	wg     sync.WaitGroup
	reaped atomic.Int64
	self   int
	once   sync.Once
}

// ErrReaperRunning is returned by NewReaper while another Reaper runs.
var ErrReaperRunning = errors.New("a reaper already runs in this process")

// NewReaper makes the process a child subreaper and starts reaping. Close
// it. Every child the process starts from now on must be started with
// Start: any other child's exit status may be taken by the reaper.
func NewReaper() (*Reaper, error) {
	if !running.CompareAndSwap(false, true) {
		return nil, ErrReaperRunning
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		running.Store(false)
		return nil, fmt.Errorf("become a child subreaper: %w", err)
	}
	r := &Reaper{sigs: make(chan os.Signal, 1), done: make(chan struct{}), self: os.Getpid()}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case <-r.sigs:
				r.Reap()
			case <-r.done:
				return
			}
		}
	}()
	return r, nil
}

// Close stops reaping and gives up the subreaper role (processes that
// leave a tree from now on go to init, as before NewReaper); it reaps
// once more first. It returns once the reaper's goroutine has ended. A
// second Close does nothing.
func (r *Reaper) Close() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		signal.Stop(r.sigs)
		close(r.done)
		r.wg.Wait()
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		r.Reap()
		running.Store(false)
	})
}

// Reaped is how many adopted processes the reaper has reaped.
func (r *Reaper) Reaped() int64 {
	if r == nil {
		return 0
	}
	return r.reaped.Load()
}

// Reap reaps, now, every adopted child that has exited, and returns the
// pids of the adopted children still alive: the processes that left the
// tree of a child of this process and outlived their parent. It is safe
// for concurrent use.
func (r *Reaper) Reap() (alive []int) {
	if r == nil {
		return nil
	}
	gate.Lock()
	defer gate.Unlock()
	for _, pid := range childPids(r.self) {
		directMu.Lock()
		_, mine := direct[pid]
		directMu.Unlock()
		if mine {
			continue // started by Start: its waiter reaps it
		}
		st, ok := Read(pid)
		if !ok || st.PPid != r.self {
			continue
		}
		if st.Alive() {
			alive = append(alive, pid)
			continue
		}
		// A zombie child that no Start registered: an adopted process. Its
		// pid cannot be reused before it is reaped, here.
		var ws unix.WaitStatus
		if n, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && n == pid {
			r.reaped.Add(1)
		}
	}
	return alive
}

// childPids lists the children of the calling process (pid self) that
// may have been adopted: those of its main thread. The kernel reparents an
// orphan to the first live thread of its subreaper, the main thread of a
// Go program (it never exits before the program), so one read of its
// children file finds them all; children other threads forked are ones
// Start registered. Without that file (a kernel without
// CONFIG_PROC_CHILDREN) it scans the process table.
func childPids(self int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(self) + "/task/" + strconv.Itoa(self) + "/children")
	if err != nil {
		return pids(Children(self))
	}
	var out []int
	for _, f := range bytes.Fields(b) {
		if n, err := strconv.Atoi(string(f)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func pids(sts []Stat) []int {
	out := make([]int, len(sts))
	for i, s := range sts {
		out[i] = s.Pid
	}
	return out
}

// UID is the real uid owning process pid (of its /proc directory); ok is
// false when it is gone.
func UID(pid int) (int, bool) {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
