package hivetest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StateDir makes an empty state dir for one test, directly in the system's
// temp dir (a unix socket's path must be short: the test's own temp dir is
// too deep). When the test ends, StopState stops the daemon and the holder
// of the jobs that run on it then, and the dir is removed.
func StateDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "hive-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		StopState(tb, dir)
		os.RemoveAll(dir)
	})
	return dir
}

// How long StopState gives a process to end on SIGTERM.
const (
	holderStopTimeout = 25 * time.Second // after its daemon's SIGTERM
	stopTimeout       = 20 * time.Second
)

// StopState stops what runs on state dir state, by the pids in its lock
// files (DaemonPid, HolderPid), whoever started it (a test, a bridge).
// The daemon gets SIGTERM; it must stop its holder of the jobs too: a
// holder still there 25 s later fails the test (tb.Errorf). Then what is
// left (a holder whose daemon had been killed, which ends its jobs on
// SIGTERM) gets SIGTERM, and SIGKILL after 20 s, which fails the test
// too. It returns once all are gone.
func StopState(tb testing.TB, state string) {
	tb.Helper()
	if d, h := DaemonPid(state), HolderPid(state); d != 0 && Alive(d) && h != 0 {
		signal(d, syscall.SIGTERM)
		if err := Wait(holderStopTimeout, Gone(h)); err != nil {
			tb.Errorf("the holder %d outlived its daemon's SIGTERM: %v", h, err)
		}
	}
	for _, pid := range []int{DaemonPid(state), HolderPid(state)} {
		if pid == 0 || !Alive(pid) {
			continue
		}
		signal(pid, syscall.SIGTERM)
		if err := Wait(stopTimeout, Gone(pid)); err != nil {
			signal(pid, syscall.SIGKILL)
			tb.Errorf("process %d of state dir %s did not stop on SIGTERM: %v", pid, state, err)
		}
	}
}

// DaemonPid is the pid the daemon of state dir state wrote to its lock
// file (daemon.lock), 0 if there is none. The file outlives its daemon:
// check the pid with Alive.
func DaemonPid(state string) int {
	return readPid(filepath.Join(state, "daemon.lock"))
}

// HolderPid is the pid of the live holder of the jobs of state dir state
// (`hive holder --state-dir STATE`, as the daemon starts it), from its lock
// file (holder.sock.lock); 0 if no such holder runs.
func HolderPid(state string) int {
	pid := readPid(filepath.Join(state, "holder.sock.lock"))
	if pid == 0 {
		return 0
	}
	// The file outlives its holder, and its pid may be another process's
	// by now: only a holder of this dir.
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if !strings.Contains(string(cmdline), "holder\x00--state-dir\x00"+state+"\x00") {
		return 0
	}
	return pid
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Alive reports whether process pid runs: it exists and, where /proc
// tells (Linux), is not a zombie. Elsewhere a zombie counts as alive.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	defer p.Release()
	return p.Signal(syscall.Signal(0)) == nil
}

// Gone is a condition for Wait and Eventually: nil once process pid no
// longer runs (see Alive), else an error that says it still does.
func Gone(pid int) func() error {
	return func() error {
		if Alive(pid) {
			return fmt.Errorf("process %d still runs", pid)
		}
		return nil
	}
}

// signal sends sig to process pid, if it exists; what fails is ignored
// (the process may have ended meanwhile).
func signal(pid int, sig os.Signal) {
	Signal(pid, sig)
}

// Signal sends sig to process pid, by os.Process.Signal: it compiles for
// every platform, where syscall.Kill does not (on Windows only os.Kill
// can be sent; syscall.SIGTERM fails there). The error names the pid and
// the signal; it wraps os.ErrProcessDone once the process has ended.
func Signal(pid int, sig os.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return fmt.Errorf("find process %d to signal %v: %w", pid, sig, err)
	}
	defer p.Release()
	if err := p.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to process %d: %w", sig, pid, err)
	}
	return nil
}

// Kill ends process pid at once: SIGKILL, on Windows TerminateProcess
// (Signal with os.Kill).
func Kill(pid int) error {
	return Signal(pid, os.Kill)
}

// ProcState is the state letter of process pid as /proc tells it ('R',
// 'S', 'T' for stopped, 'Z'…), 0 where it cannot be read (no such
// process, or no /proc: not Linux).
func ProcState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// Symlink makes newname a symbolic link to oldname, for a test that plants
// one. Where symlinks cannot be made (Windows without the privilege to
// make them) it skips the test; any other failure fails it.
func Symlink(tb testing.TB, oldname, newname string) {
	tb.Helper()
	if err := os.Symlink(oldname, newname); err != nil {
		if runtime.GOOS == "windows" {
			tb.Skipf("symlinks cannot be made here: %v", err)
		}
		tb.Fatalf("plant a symlink: %v", err)
	}
}
