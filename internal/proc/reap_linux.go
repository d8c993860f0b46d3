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

// Direct children. A start counts itself in flight (starting) from
// before its fork until its pid is registered in direct; a pass reaps a
// zombie that no start registered only while no start is in flight, and
// under directMu, so it never takes the status of a direct child it has
// not heard of yet. A pass that leaves such a zombie for that reason
// (deferred) runs again once the last start in flight is over (kick).
// Nothing waits for a start in flight: an exec that takes long (a binary
// on a hung network file system) holds up no other start, no pass, no
// job's end.
var (
	directMu sync.Mutex // guards direct, starting, deferred
	// direct holds the children started by Start and not yet waited for.
	direct   = map[int]*exec.Cmd{}
	starting int  // starts in flight
	deferred bool // a pass left a zombie because of a start in flight
	// kick asks the running Reaper for a pass.
	kick = make(chan struct{}, 1)
	// active is the Reaper that runs, if any.
	active atomic.Pointer[Reaper]
)

// startHook, if set (by tests), runs in each start while it is in
// flight, before cmd.Start: a stand-in for an exec that takes long.
var startHook func(cmd *exec.Cmd)

// start starts cmd; a child (not one of hive's own processes: StartOwn)
// gets the timer slack this process was given (withChildSlack).
func start(cmd *exec.Cmd, child bool) error {
	directMu.Lock()
	starting++
	directMu.Unlock()
	if h := startHook; h != nil {
		h(cmd)
	}
	var err error
	if child {
		err = withChildSlack(cmd.Start)
	} else {
		err = cmd.Start()
	}
	directMu.Lock()
	starting--
	if err == nil {
		direct[cmd.Process.Pid] = cmd
	}
	again := starting == 0 && deferred
	if again {
		deferred = false
	}
	directMu.Unlock()
	if again {
		select {
		case kick <- struct{}{}:
		default: // a pass is already asked for
		}
	}
	return err
}

// awaitExit returns once pid, a child not reaped yet, has exited: the
// wait that follows (cmd.Wait) reaps it at once. It waits in the
// runtime's poller, on a pidfd, not in a blocking system call: a child
// that runs then holds no thread, and its end costs no hand-off of the
// runtime's processor from a thread blocked in wait4 (and the runtime's
// monitor no wake-ups every 20 µs while one is). Without non-blocking
// pidfds (Linux before 5.10, or a poller that will not take one) it
// returns at once, and the blocking wait does it all. A child that has
// exited already (on a machine of few processors a short one often runs
// to its end before its parent goes on) costs one system call here, not
// a pidfd and its registration with the poller.
func awaitExit(pid int) {
	if Exited(pid) {
		return
	}
	fd, err := unix.PidfdOpen(pid, unix.O_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		// Not reaped here (WNOWAIT): the status stays the wait's. With
		// WNOHANG and nothing to tell, the kernel clears info.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0 // an error: the blocking wait tells it
	})
}

// forget drops cmd's registration, and only cmd's: its pid may already
// be another child's, started since cmd was waited for.
func forget(cmd *exec.Cmd) {
	directMu.Lock()
	if c, ok := direct[cmd.Process.Pid]; ok && c == cmd {
		delete(direct, cmd.Process.Pid)
	}
	directMu.Unlock()
}

func isDirect(pid int) bool {
	directMu.Lock()
	_, ok := direct[pid]
	directMu.Unlock()
	return ok
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
	r := &Reaper{sigs: make(chan os.Signal, 1), done: make(chan struct{}), self: os.Getpid()}
	if !active.CompareAndSwap(nil, r) {
		return nil, ErrReaperRunning
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		active.Store(nil)
		return nil, fmt.Errorf("become a child subreaper: %w", err)
	}
	children.open(r.self) // now: it stays open while the reaper runs
	signal.Notify(r.sigs, syscall.SIGCHLD)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			select {
			case <-r.sigs:
				r.Reap()
			case <-kick:
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
		children.close()
		active.CompareAndSwap(r, nil)
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
// for concurrent use, and never waits for a Start in flight: a zombie it
// cannot tell yet from the child of such a start is left to the pass the
// last start in flight asks for when it is over.
func (r *Reaper) Reap() (alive []int) {
	if r == nil {
		return nil
	}
	for _, pid := range listChildren(r.self) {
		st, ok := Read(pid)
		if !ok || st.PPid != r.self {
			continue
		}
		if st.Alive() {
			if !isDirect(pid) {
				alive = append(alive, pid)
			}
			continue
		}
		// A "zombie" that cannot be reaped may be a process whose main
		// thread exited while others run: alive.
		if !r.reapZombie(pid) && !isDirect(pid) && liveThreads(pid) {
			alive = append(alive, pid)
		}
	}
	return alive
}

// liveThreads reports whether process pid, its main thread a zombie,
// has other threads.
func liveThreads(pid int) bool {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err == nil && len(ents) > 1
}

// reapZombie reaps pid, a zombie child, unless it is (or may be, while a
// start is in flight) a child started by Start: its waiter reaps that one.
// A zombie no Start registered is an adopted process; its pid cannot be
// reused before it is reaped.
func (r *Reaper) reapZombie(pid int) bool {
	directMu.Lock()
	defer directMu.Unlock()
	if _, mine := direct[pid]; mine {
		return false
	}
	if starting > 0 {
		deferred = true // reaped by the pass the last start asks for
		return false
	}
	var ws unix.WaitStatus
	if n, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && n == pid {
		r.reaped.Add(1)
		return true
	}
	return false
}

// reapExited reaps, while a Reaper runs, those of ps that have exited
// and are its adopted children. It goes by their pidfds (by pid where
// there is none), not by the children list a pass reads, which can miss
// an entry while other children come and go: a process that Terminate
// killed is gone, not a zombie, when it returns.
func reapExited(ps []Pinned) {
	r := active.Load()
	if r == nil {
		return
	}
	for _, p := range ps {
		if p.fd < 0 {
			if st, ok := Read(p.Pid); ok && !st.Alive() && st.PPid == r.self {
				r.reapZombie(p.Pid)
			}
			continue
		}
		directMu.Lock()
		if _, mine := direct[p.Pid]; !mine {
			var info unix.Siginfo
			err := unix.Waitid(unix.P_PIDFD, p.fd, &info, unix.WEXITED|unix.WNOHANG, nil)
			if err == nil && info.Signo == int32(unix.SIGCHLD) {
				r.reaped.Add(1)
			}
		}
		directMu.Unlock()
	}
}

// listChildren is childPids; tests replace it to stand for a read of the
// children file that misses entries.
var listChildren = childPids

// childPids lists the children of the calling process (pid self) that
// may have been adopted: those of its main thread. The kernel reparents an
// orphan to the first live thread of its subreaper, the main thread of a
// Go program (it never exits before the program), so one read of its
// children file finds them all; children other threads forked are ones
// Start registered. Without that file (a kernel without
// CONFIG_PROC_CHILDREN) it scans the process table.
func childPids(self int) []int {
	children.Lock()
	defer children.Unlock()
	b, err := children.read(self)
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

// children is the children file of this process's main thread, kept
// open while a Reaper runs (opened by NewReaper, closed by its Close):
// each pass reads it again from its start (the kernel lists the children
// anew at offset 0), one system call where an open, a read and a close
// were three, on every job's end (the escape sweep) and every SIGCHLD.
var children childrenFile

type childrenFile struct {
	sync.Mutex
	fd    int
	pid   int // whose file fd is; 0: none open
	buf   []byte
	opens int // the opens made (tests)
}

// open opens the file of process self now (a read opens it otherwise).
func (c *childrenFile) open(self int) {
	c.Lock()
	defer c.Unlock()
	c.read(self)
}

// close closes the file.
func (c *childrenFile) close() {
	c.Lock()
	defer c.Unlock()
	if c.pid != 0 {
		unix.Close(c.fd)
		c.pid = 0
	}
}

// read returns the file's content, in c.buf (valid until the next read);
// the caller holds c.
func (c *childrenFile) read(self int) ([]byte, error) {
	if c.pid != self {
		if c.pid != 0 {
			unix.Close(c.fd)
			c.pid = 0
		}
		fd, err := unix.Open("/proc/"+strconv.Itoa(self)+"/task/"+strconv.Itoa(self)+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		c.fd, c.pid = fd, self
		c.opens++
	}
	if c.buf == nil {
		c.buf = make([]byte, 512)
	}
	for {
		n, err := unix.Pread(c.fd, c.buf, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			unix.Close(c.fd)
			c.pid = 0
			return nil, err
		case n == len(c.buf):
			c.buf = make([]byte, 2*len(c.buf)) // maybe more: again, whole
			continue
		}
		return c.buf[:n], nil
	}
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

// Exited reports whether pid, a child of this process not reaped yet,
// has exited (it is a zombie: a wait reaps it at once). It reaps nothing.
func Exited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo != 0
}
