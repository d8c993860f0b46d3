package pty

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/proc"
)

// The kinds of blocking system calls probeGroup looks into.
const (
	callRead   = iota + 1 // read(fd, …) and its kin: fd is args[0]
	callSelect            // pselect6/select(nfds, readfds, …)
	callPoll              // ppoll/poll(fds, nfds, …)
	callEpoll             // epoll_wait/epoll_pwait(epfd, …)
)

// waitCalls maps the system calls a program waits for input in to their
// kind; waitcalls_linux_amd64.go adds the older calls amd64 still has.
var waitCalls = map[int64]int{
	unix.SYS_READ:         callRead,
	unix.SYS_READV:        callRead,
	unix.SYS_PREAD64:      callRead,
	unix.SYS_PREADV:       callRead,
	unix.SYS_PSELECT6:     callSelect,
	unix.SYS_PPOLL:        callPoll,
	unix.SYS_EPOLL_PWAIT:  callEpoll,
	unix.SYS_EPOLL_PWAIT2: callEpoll,
}

// maxProbeThreads bounds the threads looked at in one process; a process
// with more is fgUnknown. maxProbeMembers bounds the processes of the
// group looked at.
const (
	maxProbeThreads = 64
	maxProbeMembers = 16
)

// probeGroup tells what foreground process group pg is doing (see
// fgProbe), from /proc: for each thread of its processes, the system call
// it is blocked in (/proc/PID/task/TID/syscall) and, for a read, select,
// poll or epoll wait, whether the terminal tty (its /dev/pts path) is
// among the files it waits on. The group is waiting for input when one of
// its processes is: the leader, or a process it started in its group (a
// pager: git log's less), or, once the leader is gone, any (grep | less).
// Looking needs the right to trace the process (the daemon started it);
// without it the state is fgUnknown.
func probeGroup(pg int, tty string) fgProbe {
	p := fgProbe{pid: pg, state: fgBusy}
	var todo []int
	if st, ok := proc.Read(pg); ok && st.Alive() && st.Pgrp == pg {
		todo = []int{pg}
	} else {
		// The leader is gone while its group holds the terminal (a
		// pipeline whose first command ended; the shell takes the
		// terminal back when the group ends).
		for _, st := range proc.Live(func(st proc.Stat) bool { return st.Pgrp == pg }) {
			todo = append(todo, st.Pid)
		}
	}
	input, unknown := false, false
	for n := 0; len(todo) > 0 && n < maxProbeMembers; n++ {
		pid := todo[0]
		todo = todo[1:]
		l := looker{pid: pid, dir: "/proc/" + strconv.Itoa(pid), tty: tty}
		switches, state, children := l.process(pg)
		l.close()
		p.switches += switches
		switch state {
		case fgInput:
			input = true
		case fgUnknown:
			unknown = true
		}
		todo = append(todo, children...)
	}
	switch {
	case input:
		p.state = fgInput
	case unknown:
		p.state = fgUnknown
	}
	return p
}

// process looks at one process of group pg: the voluntary context
// switches of its threads (counted whatever its state: SendReady compares
// them with a look taken before the input, maybe while it ran), whether
// it waits for input from the terminal, and its children.
func (l *looker) process(pg int) (switches uint64, state fgState, children []int) {
	st, ok := proc.Read(l.pid)
	if !ok || !st.Alive() || st.Pgrp != pg {
		return 0, fgBusy, nil
	}
	ents, err := os.ReadDir(l.dir + "/task")
	if err != nil || len(ents) == 0 {
		return 0, unlessGone(err), nil
	}
	if len(ents) > maxProbeThreads {
		return 0, fgUnknown, nil
	}
	state = fgBusy
	unknown := false
	for _, e := range ents {
		tdir := l.dir + "/task/" + e.Name()
		switches += voluntarySwitches(tdir)
		if b, err := os.ReadFile(tdir + "/children"); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					children = append(children, pid)
				}
			}
		}
		if st.State != 'S' || state == fgInput {
			continue // running or stopped; or known already
		}
		switch l.thread(tdir) {
		case fgInput:
			state = fgInput
		case fgUnknown:
			unknown = true
		}
	}
	if state != fgInput && unknown {
		state = fgUnknown
	}
	return switches, state, children
}

// unlessGone is the state of a process whose file gave err: fgUnknown
// when looking is not allowed, fgBusy otherwise (it is exiting or
// changing: the terminal's foreground will change too).
func unlessGone(err error) fgState {
	if errors.Is(err, fs.ErrPermission) {
		return fgUnknown
	}
	return fgBusy
}

// voluntarySwitches reads a thread's voluntary context switches: it grows
// each time the thread blocks.
func voluntarySwitches(tdir string) uint64 {
	b, err := os.ReadFile(tdir + "/status")
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(b, []byte("\nvoluntary_ctxt_switches:"))
	if !ok {
		return 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, _ := strconv.ParseUint(string(bytes.TrimSpace(line)), 10, 64)
	return n
}

// looker reads one process's files for probeGroup.
type looker struct {
	pid      int
	dir, tty string // /proc/PID, the terminal's path
	mem      *os.File
	memErr   error
}

func (l *looker) close() {
	if l.mem != nil {
		l.mem.Close()
	}
}

// thread tells whether the thread whose /proc directory is tdir is blocked
// waiting for input from the terminal.
func (l *looker) thread(tdir string) fgState {
	b, err := os.ReadFile(tdir + "/syscall")
	if err != nil {
		if _, serr := os.Stat(tdir); serr == nil && errors.Is(err, fs.ErrNotExist) {
			return fgUnknown // a kernel without the file
		}
		return unlessGone(err)
	}
	f := strings.Fields(string(b))
	if len(f) < 7 || f[0] == "running" {
		return fgBusy
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return fgBusy
	}
	var args [6]uint64
	for i := range args {
		args[i], _ = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64)
	}
	var fds []int
	switch waitCalls[nr] {
	case callRead:
		fds = []int{int(args[0])}
	case callSelect:
		fds, err = l.selectFDs(int(args[0]), args[1])
	case callPoll:
		fds, err = l.pollFDs(args[0], int(args[1]))
	case callEpoll:
		fds, err = l.epollFDs(int(args[0]))
	default:
		return fgBusy
	}
	if err != nil {
		return unlessGone(err)
	}
	for _, fd := range fds {
		if l.isTTY(fd) {
			return fgInput
		}
	}
	return fgBusy
}

// isTTY tells whether the process's fd is the terminal.
func (l *looker) isTTY(fd int) bool {
	if fd < 0 {
		return false
	}
	p, err := os.Readlink(l.dir + "/fd/" + strconv.Itoa(fd))
	return err == nil && (p == l.tty || p == "/dev/tty")
}

// read reads n bytes of the process's memory at addr.
func (l *looker) read(addr uint64, n int) ([]byte, error) {
	if l.mem == nil && l.memErr == nil {
		l.mem, l.memErr = os.Open(l.dir + "/mem")
	}
	if l.memErr != nil {
		return nil, l.memErr
	}
	b := make([]byte, n)
	if _, err := l.mem.ReadAt(b, int64(addr)); err != nil {
		return nil, err
	}
	return b, nil
}

// selectFDs lists the fds of a select's read set.
func (l *looker) selectFDs(nfds int, readfds uint64) ([]int, error) {
	if readfds == 0 || nfds <= 0 {
		return nil, nil
	}
	nfds = min(nfds, 1024)
	const word = int(unsafe.Sizeof(uint(0))) // fd_set is an array of longs
	words := (nfds + 8*word - 1) / (8 * word)
	b, err := l.read(readfds, words*word)
	if err != nil {
		return nil, err
	}
	var fds []int
	for w := 0; w < words; w++ {
		var v uint64
		if word == 8 {
			v = binary.NativeEndian.Uint64(b[w*8:])
		} else {
			v = uint64(binary.NativeEndian.Uint32(b[w*4:]))
		}
		for bit := 0; bit < 8*word; bit++ {
			if fd := w*8*word + bit; v&(1<<bit) != 0 && fd < nfds {
				fds = append(fds, fd)
			}
		}
	}
	return fds, nil
}

// pollFDs lists the fds a poll waits to read on.
func (l *looker) pollFDs(addr uint64, n int) ([]int, error) {
	if addr == 0 || n <= 0 {
		return nil, nil
	}
	n = min(n, 256)
	b, err := l.read(addr, n*8) // struct pollfd { int fd; short events, revents; }
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := 0; i < n; i++ {
		fd := int(int32(binary.NativeEndian.Uint32(b[i*8:])))
		if ev := binary.NativeEndian.Uint16(b[i*8+4:]); ev&unix.POLLIN != 0 {
			fds = append(fds, fd)
		}
	}
	return fds, nil
}

// epollFDs lists the fds an epoll instance watches for reading, from its
// fdinfo ("tfd: 5 events: 19 …").
func (l *looker) epollFDs(epfd int) ([]int, error) {
	f, err := os.Open(l.dir + "/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var fds []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 4 || w[0] != "tfd:" || w[2] != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(w[1])
		ev, err2 := strconv.ParseUint(w[3], 16, 32)
		if err1 == nil && err2 == nil && ev&unix.EPOLLIN != 0 {
			fds = append(fds, fd)
		}
	}
	return fds, sc.Err()
}

// ioctlInQueue asks a terminal how many bytes wait to be read.
const ioctlInQueue = unix.TIOCINQ
