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
const (
	envRlimits = "HIVE_EXEC_RLIMITS" // as=N,nproc=N,cpu=N,nofile=N
	envPath    = "HIVE_EXEC_PATH"    // the command's path
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

// Wrap sets cmd (not started) to run with rlimits r: see envRlimits. Its
// Path becomes this binary; Args stay. A zero r changes nothing. Only a
// program that imports this package can be wrapped's spawner (hive and
// its tests do).
func Wrap(cmd *exec.Cmd, r Rlimits) {
	if r.IsZero() {
		return
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)], envRlimits+"="+r.encode(), envPath+"="+cmd.Path)
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
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envRlimits+"=") && !strings.HasPrefix(kv, envPath+"=") {
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
