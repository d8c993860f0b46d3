//go:build linux || darwin

package limits

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A job's rlimits are set by its own process before it runs the command:
// Wrap makes the command run the spawner's binary (/proc/self/exe, this
// very build) with the rlimits and the command's path in its
// environment; that process's init (below) sets them and execs the
// command, same pid, same argv. Go's os/exec has no way to set a child's
// rlimits between fork and exec, prlimit(2) on the child after its start
// is too late (it may have run already), and the spawner (the holder, or
// a daemon) cannot set its own and let its children inherit them: it
// runs many jobs at once, each with its own.
//
// The same process joins the job's cgroup v1 directories, if any (a
// hybrid mount, where cgroup v2 lacks a controller): it writes its own
// pid to each one's cgroup.procs before the rest, so the command is in
// them from its first instruction, and so is every process it starts.
// The spawner could not put it there itself: os/exec has no hook
// between fork and exec, clone3's CLONE_INTO_CGROUP takes one cgroup v2
// only, and a write of the child's pid after its start comes too late
// (it may have forked or allocated already).
const (
	envRlimits = "HIVE_EXEC_RLIMITS" // as=N,nproc=N,cpu=N,nofile=N (may be empty)
	envPath    = "HIVE_EXEC_PATH"    // the command's path
	envCgroups = "HIVE_EXEC_CGROUPS" // cgroup v1 directories to join, one a line
)

// selfExe is the running binary, in a child between fork and exec too.
const selfExe = "/proc/self/exe"

// canRlimit: Wrap sets rlimits here.
const canRlimit = true

// nprocBinds reports whether RLIMIT_NPROC would bind this process's
// jobs: not root's (the kernel exempts CAP_SYS_ADMIN and
// CAP_SYS_RESOURCE; root is taken to have them).
func nprocBinds() bool { return os.Geteuid() != 0 }

func init() {
	if spec, ok := os.LookupEnv(envRlimits); ok {
		execWithRlimits(spec)
	}
}

// Wrap sets cmd (not started) to run with rlimits r, in the cgroup v1
// directories cgroups (each one's cgroup.procs is written; a directory
// may not have a newline in its name): see envRlimits. Its Path becomes
// this binary; Args stay. A zero r without cgroups changes nothing.
// Only a program that imports this package can be wrapped's spawner
// (hive and its tests do).
func Wrap(cmd *exec.Cmd, r Rlimits, cgroups ...string) {
	if r.IsZero() && len(cgroups) == 0 {
		return
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)], envRlimits+"="+r.encode(), envPath+"="+cmd.Path)
	if len(cgroups) > 0 {
		env = append(env, envCgroups+"="+strings.Join(cgroups, "\n"))
	}
	cmd.Env = env
	cmd.Path = selfExe
}

func (r Rlimits) encode() string {
	var b []string
	for _, f := range []struct {
		k string
		v uint64
	}{{"as", r.AS}, {"nproc", r.Nproc}, {"cpu", r.CPU}, {"nofile", r.Nofile}, {"nofile_soft", r.NofileSoft}} {
		if f.v > 0 {
			b = append(b, f.k+"="+strconv.FormatUint(f.v, 10))
		}
	}
	return strings.Join(b, ",")
}

// execWithRlimits is the wrapped process: it sets the rlimits of spec,
// drops the two variables from its environment and execs the command.
// It never returns: a failure is told on stderr, exit status 126 (as a
// shell's for a command it cannot run).
func execWithRlimits(spec string) {
	path := os.Getenv(envPath)
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "hive: cannot run %s with its limits: %v\n", path, err)
		os.Exit(126)
	}
	if path == "" {
		fail(errors.New(envPath + " is not set"))
	}
	type set struct {
		k   string
		res int
		n   uint64
	}
	var sets, mem []set
	var nofileSoft uint64
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue // no rlimits: cgroups only
		}
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			fail(fmt.Errorf("%s: %q is not a number", envRlimits, kv))
		}
		switch k {
		case "as":
			mem = append(mem, set{k, unix.RLIMIT_DATA, n}, set{k, unix.RLIMIT_AS, n})
		case "nproc":
			sets = append(sets, set{k, unix.RLIMIT_NPROC, n})
		case "cpu":
			sets = append(sets, set{k, unix.RLIMIT_CPU, n})
		case "nofile":
			sets = append(sets, set{k, unix.RLIMIT_NOFILE, n})
		case "nofile_soft":
			nofileSoft = n
		default:
			fail(fmt.Errorf("%s: unknown limit %q", envRlimits, k))
		}
	}
	// The cgroups first: what this process allocates from now on is
	// charged to the job's memory cgroup, and the command starts in
	// them (see envCgroups).
	if dirs := os.Getenv(envCgroups); dirs != "" {
		pid := []byte(strconv.Itoa(os.Getpid()))
		for _, dir := range strings.Split(dirs, "\n") {
			if err := os.WriteFile(dir+"/cgroup.procs", pid, 0); err != nil {
				fail(fmt.Errorf("join cgroup %s: %w", dir, err))
			}
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envRlimits+"=") && !strings.HasPrefix(kv, envPath+"=") && !strings.HasPrefix(kv, envCgroups+"=") {
			env = append(env, kv)
		}
	}
	if nofileSoft > 0 {
		// The soft limit of open files the command would get unwrapped
		// (Rlimits.NofileSoft), not the one the Go runtime raised here;
		// a nofile limit, if any, is set next.
		var cur syscall.Rlimit
		if syscall.Getrlimit(unix.RLIMIT_NOFILE, &cur) == nil && nofileSoft <= cur.Max {
			cur.Cur = nofileSoft
			syscall.Setrlimit(unix.RLIMIT_NOFILE, &cur)
		}
	}
	for _, x := range sets {
		hard := x.n
		if x.res == unix.RLIMIT_CPU {
			// The soft limit sends SIGXCPU, which tells the job's end
			// (limits.Hit); a hard limit equal to it would send
			// SIGKILL instead. A job that ignores SIGXCPU gets
			// SIGKILL a second later.
			hard++
		}
		if err := syscall.Setrlimit(x.res, &syscall.Rlimit{Cur: x.n, Max: hard}); err != nil {
			fail(fmt.Errorf("%s=%d: %w", x.k, x.n, err))
		}
	}
	// The memory limits come last, right before the exec, which is made
	// ready first: past them this process may not grow its heap (the Go
	// runtime then dies "out of memory"), so nothing between allocates.
	execve, err := prepareExec(path, os.Args, env)
	if err != nil {
		fail(err)
	}
	lims := make([]unix.Rlimit, len(mem))
	for i, x := range mem {
		lims[i] = unix.Rlimit{Cur: x.n, Max: x.n}
	}
	for i, x := range mem {
		if errno := setrlimitRaw(x.res, &lims[i]); errno != 0 {
			fail(fmt.Errorf("%s=%d: %w", x.k, x.n, errno))
		}
	}
	fail(execve())
}
