package proc

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Pinned is a process held by a pidfd: signals sent through it reach that
// process and no other, whatever happens to its pid number. Close it.
type Pinned struct {
	Pid int
	fd  int // -1 without pidfd support: signals go by pid
}

// Pin opens a pidfd for pid and then calls verify with the process's
// stat: with the pidfd held the pid cannot be reused, so what verify
// checks (a start time, an environment mark) holds for the process the
// pidfd signals. ok is false when the process is gone, a zombie, or
// verify refuses it.
func Pin(pid int, verify func(Stat) bool) (Pinned, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return Pinned{}, false // ESRCH: gone
		}
		fd = -1 // an old kernel: best effort, by pid
	}
	st, ok := Read(pid)
	if !ok || !st.Alive() || (verify != nil && !verify(st)) {
		if fd >= 0 {
			unix.Close(fd)
		}
		return Pinned{}, false
	}
	return Pinned{Pid: pid, fd: fd}, true
}

// Signal sends sig to the pinned process.
func (p Pinned) Signal(sig syscall.Signal) error {
	if p.fd < 0 {
		return syscall.Kill(p.Pid, sig)
	}
	return unix.PidfdSendSignal(p.fd, sig, nil, 0)
}

// Close releases the pidfd.
func (p Pinned) Close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
	}
}

// WaitExit waits until every pinned process has exited (zombies count as
// exited), or the deadline; it returns those still alive. It waits on the
// pidfds, without polling.
func WaitExit(ps []Pinned, deadline time.Time) []Pinned {
	var alive []Pinned
	var pfds []unix.PollFd
	var idx []int
	for i, p := range ps {
		if p.fd < 0 {
			if st, ok := Read(p.Pid); ok && st.Alive() {
				alive = append(alive, p) // no pidfd: cannot wait, report it
			}
			continue
		}
		pfds = append(pfds, unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN})
		idx = append(idx, i)
	}
	for len(pfds) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		n, err := unix.Poll(pfds, int(left/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
		if n <= 0 {
			continue
		}
		keepF, keepI := pfds[:0], idx[:0]
		for k, pf := range pfds {
			if pf.Revents == 0 {
				keepF, keepI = append(keepF, pf), append(keepI, idx[k])
			}
		}
		pfds, idx = keepF, keepI
	}
	for _, i := range idx {
		alive = append(alive, ps[i])
	}
	return alive
}
