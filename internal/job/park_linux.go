package job

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// parker waits for the pipes of idle jobs in one goroutine, so a job
// that writes nothing for a while holds no goroutine (and no stack) for
// its output: its pump parks (parkRead) and a new one starts when the
// pipe has something to read or reaches its end. The goroutine and its
// two descriptors (the epoll instance, the eventfd) exist only while
// something is parked: they go with the last one.
var parker struct {
	mu      sync.Mutex
	epfd    int // -1 until made
	wake    int // an eventfd in epfd: a change for the loop to see
	running bool
	next    uint32
	parked  map[uint32]*parkedRead
}

type parkedRead struct {
	fd     int
	resume func()
}

func init() { parker.epfd, parker.wake = -1, -1 }

// parkable: an idle pump parks here (parkRead).
const parkable = true

// parkRead parks a pump whose pipe r has given nothing for pumpIdle:
// resume runs on a goroutine of its own once r is readable (data, or
// its end), or at once if unpark is called first. false if r cannot be
// parked (then the caller goes on reading).
func parkRead(r *os.File, resume func()) (token uint32, ok bool) {
	rc, err := r.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	if rc.Control(func(f uintptr) { fd = int(f) }) != nil || fd < 0 {
		return 0, false
	}
	parker.mu.Lock()
	defer parker.mu.Unlock()
	if parker.epfd < 0 { // nothing parked: none runs
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return 0, false
		}
		ev, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			unix.Close(ep)
			return 0, false
		}
		if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, ev, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: 0}) != nil {
			unix.Close(ep)
			unix.Close(ev)
			return 0, false
		}
		parker.epfd, parker.wake = ep, ev
		parker.parked = map[uint32]*parkedRead{}
	}
	parker.next++
	if parker.next == 0 { // 0 is the eventfd's
		parker.next++
	}
	token = parker.next
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(token)}
	if unix.EpollCtl(parker.epfd, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		return 0, false
	}
	parker.parked[token] = &parkedRead{fd: fd, resume: resume}
	if !parker.running {
		parker.running = true
		go parkLoop(parker.epfd, parker.wake)
	}
	return token, true
}

// unpark resumes the pump parked as token now, if it still is (its
// resume has not run): true if this call started it.
func unpark(token uint32) bool {
	parker.mu.Lock()
	p := takeLocked(token)
	parker.mu.Unlock()
	if p == nil {
		return false
	}
	go p.resume()
	return true
}

// takeLocked removes token's parked read (nil if none), and tells the
// loop when nothing is parked any more, for it to end.
func takeLocked(token uint32) *parkedRead {
	p := parker.parked[token]
	if p == nil {
		return nil
	}
	delete(parker.parked, token)
	unix.EpollCtl(parker.epfd, unix.EPOLL_CTL_DEL, p.fd, nil)
	if len(parker.parked) == 0 {
		var one = [8]byte{1}
		unix.Write(parker.wake, one[:])
	}
	return p
}

// parkLoop resumes the parked pumps whose pipes are readable, and ends
// once none is parked.
func parkLoop(epfd, wake int) {
	evs := make([]unix.EpollEvent, 64)
	var drain [8]byte
	for {
		n, err := unix.EpollWait(epfd, evs, -1)
		if err != nil && err != unix.EINTR {
			n = 0
		}
		var resume []func()
		parker.mu.Lock()
		for _, ev := range evs[:max(n, 0)] {
			if ev.Fd == 0 {
				unix.Read(wake, drain[:])
				continue
			}
			if p := takeLocked(uint32(ev.Fd)); p != nil {
				resume = append(resume, p.resume)
			}
		}
		unix.Read(wake, drain[:]) // what takeLocked wrote for these
		done := len(parker.parked) == 0
		if done { // the next park makes them again
			parker.running = false
			parker.epfd, parker.wake = -1, -1
		}
		parker.mu.Unlock()
		for _, f := range resume {
			go f()
		}
		if done {
			unix.Close(epfd)
			unix.Close(wake)
			return
		}
	}
}
