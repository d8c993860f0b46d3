package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// HiveSlack is the timer slack (PR_SET_TIMERSLACK) the daemon and the
// holder run with, in nanoseconds: a timer of theirs may fire up to 1 ms
// late. Their timers are lingers and deadlines of milliseconds and more;
// what a call waits for comes by descriptors, not timers. The Go
// runtime's monitor thread (sysmon), though, sleeps 20 µs at a time
// while the process works, after every wake-up from its deep sleep (the
// first system call of each call): with the kernel's default slack of
// 50 µs, some 20 wake-ups a call in each process, every one of them a
// preemption of the thread that ran on its processor (the child, the
// answer, the client). With 1 ms, one or two. The slack is inherited at
// fork and kept across exec, so the processes a daemon or holder starts
// get back the slack it was given (childSlack: Start sets it on the
// forking thread), and the holder, started with StartOwn, inherits the
// daemon's.
const HiveSlack = 1_000_000

// EnvChildSlack carries the slack a daemon or holder was given (the one
// its children get) across its own re-exec and to the holder it starts.
const EnvChildSlack = "HIVE_CHILD_TIMERSLACK"

// childSlack is the slack the processes this one starts get; 0: this
// process's own (SlackTimers was not called, or changed nothing).
var childSlack atomic.Int64

// SlackTimers makes this process run with HiveSlack, for the daemon and
// the holder, first thing: the runtime's threads exist already and only
// inherit a slack at their creation, so a process whose slack is lower
// executes itself again (the same pid, arguments, environment and open
// descriptors) with it set, once (EnvChildSlack tells the new image the
// slack to give its children, and that it must not exec again). It
// returns only when the process runs with the slack, could not get it
// (nothing changes then), or the exec failed.
func SlackTimers() error {
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if v, ok := os.LookupEnv(EnvChildSlack); ok {
		os.Unsetenv(EnvChildSlack) // not for what this process starts
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && n < HiveSlack && cur >= HiveSlack {
			childSlack.Store(n)
		}
		renameAfterExec()
		return nil // executed again already, or started by a daemon: never twice
	}
	if cur >= HiveSlack {
		return nil // given by whatever started it: its children get it too
	}
	runtime.LockOSThread() // the exec comes from the thread whose slack is set
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, HiveSlack, 0, 0, 0); err != nil {
		return err
	}
	env := append(os.Environ(), EnvChildSlack+"="+strconv.Itoa(max(cur, 1)))
	// The image that runs, even if its file was replaced or removed
	// since (os.Executable's path would then be another, or none).
	err = syscall.Exec("/proc/self/exe", os.Args, env)
	unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(max(cur, 1)), 0, 0, 0) // the exec failed: as it was
	return err
}

// renameAfterExec gives back the name the process had before it
// executed itself again: the kernel names a process after the file it
// executes, "exe" for /proc/self/exe, and ps, top and pgrep show that
// name. Every thread is renamed (a thread made later takes the name of
// the one that makes it); the leader's name is the process's.
func renameAfterExec() {
	want := filepath.Base(os.Args[0])
	if len(want) > 15 {
		want = want[:15] // TASK_COMM_LEN, with its NUL
	}
	if b, err := os.ReadFile("/proc/self/comm"); err != nil || strings.TrimSpace(string(b)) != "exe" || want == "exe" || want == "" {
		return
	}
	// Again while a pass renamed any: a thread made meanwhile by one
	// not renamed yet is named "exe" too.
	for pass := 0; pass < 4; pass++ {
		tasks, _ := os.ReadDir("/proc/self/task")
		renamed := false
		for _, t := range tasks {
			p := "/proc/self/task/" + t.Name() + "/comm"
			if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == "exe" {
				renamed = os.WriteFile(p, []byte(want), 0) == nil || renamed
			}
		}
		if !renamed {
			return
		}
	}
}

// withChildSlack runs start (a fork) on a thread whose slack is the one
// this process's children get, when it differs from this process's.
func withChildSlack(start func() error) error {
	n := childSlack.Load()
	if n <= 0 {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(n), 0, 0, 0) != nil {
		return start()
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, HiveSlack, 0, 0, 0)
	return start()
}

// StartOwn starts cmd, a process of hive's that runs with HiveSlack too
// (the holder), as Start does but with this process's slack, and tells
// it the slack for its own children.
func StartOwn(cmd *exec.Cmd) error {
	if n := childSlack.Load(); n > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, EnvChildSlack+"="+strconv.FormatInt(n, 10))
	}
	return start(cmd, false)
}

// StartDaemon starts cmd, a hive daemon, from a process not given
// HiveSlack (a bridge, the CLI): with HiveSlack set on the forking thread
// and EnvChildSlack naming this process's slack, so that the daemon
// starts with its slack and need not execute itself again (a few
// milliseconds of its start). It does not track cmd (Start does): the
// caller waits for it. Where this process has HiveSlack already or
// cannot set it, cmd starts as it is (the daemon sees to its slack).
func StartDaemon(cmd *exec.Cmd) error {
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || cur >= HiveSlack || childSlack.Load() > 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if unix.Prctl(unix.PR_SET_TIMERSLACK, HiveSlack, 0, 0, 0) != nil {
		return cmd.Start()
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(max(cur, 1)), 0, 0, 0)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvChildSlack+"="+strconv.Itoa(max(cur, 1)))
	return cmd.Start()
}
