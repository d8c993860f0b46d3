//go:build linux || darwin

package limits

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A wrapped command runs with its rlimits: the shell inside sees them.
// The test binary is the wrapper (this package's init).
func TestWrap(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", `echo "$0 $1"; ulimit -n; ulimit -v; ulimit -St; env | grep -c HIVE_EXEC_ || true`, "a b", "c")
	Wrap(cmd, Rlimits{Nofile: 77, AS: 256 << 20, CPU: 9})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got, want := strings.Fields(string(out)), []string{"a", "b", "c", "77", "262144", "9", "0"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("argv, ulimit -n -v -t, leftover variables: %q, want %q", got, want)
	}
}

// Without a nofile limit the command gets the soft limit of open files
// it would get unwrapped (NofileSoft: the wrapper's Go runtime raised
// its own to the hard limit), and a big allocation fails under the
// memory limit. The test lowers its own soft limit below the hard one
// so that the two differ.
func TestWrapKeepsNofileAndBoundsMemory(t *testing.T) {
	var was syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	low := syscall.Rlimit{Cur: min(was.Cur, was.Max/2), Max: was.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &was)
	soft := func(r Rlimits) string {
		cmd := exec.Command("/bin/sh", "-c", "ulimit -Sn")
		Wrap(cmd, r)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	want := strconv.FormatUint(low.Cur, 10)
	if got := soft(Rlimits{}); got != want {
		t.Fatalf("ulimit -Sn unwrapped: %s, want %s", got, want)
	}
	if got := soft(Rlimits{CPU: 100, NofileSoft: low.Cur}); got != want {
		t.Errorf("ulimit -Sn wrapped with NofileSoft: %s, want %s (as unwrapped)", got, want)
	}
	if got := soft(Rlimits{CPU: 100}); got == want && was.Max != unix.RLIM_INFINITY {
		t.Errorf("ulimit -Sn wrapped without NofileSoft: %s; want what the wrapper's runtime raised it to (near the hard limit %d)", got, was.Max)
	}
	// A hog bounded at 256 MiB (it doubles a string up to it) against 32 MiB.
	cmd := exec.Command("awk", `BEGIN { s = "x"; while (length(s) < 256 * 1024 * 1024) s = s s; print "grew to", length(s) }`)
	Wrap(cmd, Rlimits{AS: 32 << 20})
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "grew to") {
		t.Errorf("awk grew past RLIMIT_AS 32 MiB: %v: %s", err, out)
	}
}

// A command that cannot be run says so, exit status 126.
func TestWrapBadPath(t *testing.T) {
	cmd := exec.Command("/bin/sh")
	cmd.Path = "/nonexistent/x"
	Wrap(cmd, Rlimits{Nofile: 64})
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 126 || !strings.Contains(string(out), "cannot run /nonexistent/x with its limits") {
		t.Errorf("%v: %s", err, out)
	}
}

// The wrapper itself never dies of the memory limit it sets (the Go
// runtime cannot grow its heap past it): 200 starts under RLIMIT_AS
// 1 GiB, far below what the runtime reserves, all run the command.
// Before the limit came last with nothing allocated after it, about
// one start in 200 died "fatal error: runtime: out of memory".
func TestWrapMemoryLimitStarts(t *testing.T) {
	for i := range 200 {
		cmd := exec.Command("/bin/true")
		Wrap(cmd, Rlimits{AS: 1 << 30})
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("start %d: %v: %.300s", i, err, out)
		}
	}
}

// A wrapped command whose cgroup cannot be joined does not run: the
// wrapper says which and exits 126, as for a limit it cannot set.
func TestWrapCgroupNotJoined(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", "touch "+dir+"/ran")
	Wrap(cmd, Rlimits{}, dir+"/no-such-cgroup")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 126 || !strings.Contains(string(out), "join cgroup "+dir+"/no-such-cgroup") {
		t.Errorf("%v: %s; want exit status 126 and the cgroup named", err, out)
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Error("the command ran outside its cgroup")
	}
}
