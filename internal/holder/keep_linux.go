package holder

import (
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/proc"
)

var (
	keepsOnce sync.Once
	keepsOK   bool
)

// canKeep reports whether the holder can keep jobs it did not start here:
// the kernel tells the exit of a process reaped by another
// (proc.PidfdExit), tried once on a child of its own.
func canKeep() bool {
	keepsOnce.Do(func() {
		var path string
		for _, p := range []string{"/bin/true", "/usr/bin/true"} {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return
		}
		cmd := exec.Command(path)
		if err := proc.Start(cmd); err != nil {
			return
		}
		fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		proc.Wait(cmd)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		_, reaped, err := proc.PidfdExit(fd)
		keepsOK = reaped && err == nil
	})
	return keepsOK
}

// hello of a daemon that may keep jobs: its keeper, and a loan of
// spares. Called before its first request is read.
func (s *server) welcome(sc *serverConn, pid int) {
	if !s.keeps || pid <= 0 {
		return
	}
	s.mu.Lock()
	kp := s.keepers[pid]
	if kp == nil {
		fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
		if err != nil {
			s.mu.Unlock()
			return
		}
		kp = &keeper{pid: pid, pidfd: os.NewFile(uintptr(fd), "pidfd"), lent: map[string]bool{}}
		s.keepers[pid] = kp
	}
	want := spareLoan - len(kp.lent)
	s.mu.Unlock()
	s.lendMu.Lock()
	s.lend(sc, kp, want)
	s.lendMu.Unlock()
}

// daemonWent is told that a connection of daemon pid ended: once its
// process is gone, its kept jobs are taken over and the cgroups lent to
// it are removed (with whatever it started in them without keeping it).
func (s *server) daemonWent(pid int) {
	s.mu.Lock()
	kp := s.keepers[pid]
	if kp == nil || kp.watch {
		s.mu.Unlock()
		return
	}
	if len(kp.lent) == 0 && !s.keepsOfLocked(pid) {
		// Nothing of it to take over or take back: a next connection
		// of it starts afresh.
		delete(s.keepers, pid)
		s.mu.Unlock()
		kp.pidfd.Close()
		return
	}
	kp.watch = true
	s.mu.Unlock()
	go func() {
		rc, err := kp.pidfd.SyscallConn()
		if err == nil {
			err = rc.Read(func(fd uintptr) bool { return proc.PidfdExited(int(fd)) })
		}
		if err != nil {
			return // the holder ends (closeKeepers): nothing is taken over
		}
		s.mu.Lock()
		kp.gone = true
		delete(s.keepers, pid)
		lent := make([]string, 0, len(kp.lent))
		for p := range kp.lent {
			lent = append(lent, p)
		}
		s.mu.Unlock()
		kp.pidfd.Close()
		s.takeOver(pid, nil)
		if len(lent) > 0 {
			s.o.Cgroups.Unlend(lent)
		}
		s.signalIdle()
	}()
}

// peerHungUp reports whether conn's peer has closed its end (no read is
// made: what is buffered stays the reader's).
func peerHungUp(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	hup := false
	rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			hup = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP) != 0
		}
	})
	return hup
}
