package proc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// TestReaperAdoptsAndSparesDirect: with a Reaper running, processes that
// leave a child's tree (setsid, a double fork) are reparented to this
// process and reaped once they exit, while the exit status of every
// child started with Start stays its waiter's.
func TestReaperAdoptsAndSparesDirect(t *testing.T) {
	if !Supported {
		t.Skip("no child subreaper here")
	}
	r, err := NewReaper()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := NewReaper(); err != ErrReaperRunning {
		t.Errorf("a second NewReaper: %v, want ErrReaperRunning", err)
	}
	// Direct children keep their statuses while adopted ones come and go.
	for i := range 30 {
		cmd := exec.Command("sh", "-c", "(sleep 0.01 &); exit "+strconv.Itoa(i))
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		err := Wait(cmd)
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != i {
			t.Fatalf("child %d: Wait = %v, state %v: its status was taken", i, err, cmd.ProcessState)
		}
	}
	// The adopted sleeps above exit on their own: wait until all 30 are
	// reaped, so none comes and goes while the checks below read the
	// children list (a read of it can miss an entry while another child
	// is being reaped).
	hivetest.Eventually(t, 10*time.Second, "the 30 adopted sleeps reaped", func() error {
		if n := r.Reaped(); n < 30 {
			r.Reap()
			return fmt.Errorf("Reaped() = %d after the 30 adopted sleeps exited, want 30", n)
		}
		return nil
	})
	// Through Start too: a child started otherwise is the reaper's to
	// take once it exits, and a pass on any SIGCHLD (its own, or that of
	// an adopted sleep above) may take it before cmd.Wait does.
	out, err := startOutput(exec.Command("sh", "-c", "setsid sleep 3600 >/dev/null 2>&1 & echo $!; (sleep 3600 >/dev/null 2>&1 & echo $!)"))
	if err != nil {
		t.Fatal(err)
	}
	var esc []int
	for _, f := range strings.Fields(string(out)) {
		n, _ := strconv.Atoi(f)
		esc = append(esc, n)
	}
	if len(esc) != 2 {
		t.Fatalf("escapees printed %q", out)
	}
	alive := r.Reap()
	for _, pid := range esc {
		if st, ok := Read(pid); !ok || st.PPid != os.Getpid() {
			t.Errorf("escapee %d: parent %d, want this process %d", pid, st.PPid, os.Getpid())
		}
		if !contains(alive, pid) {
			t.Errorf("Reap's live adopted children %v lack escapee %d", alive, pid)
		}
	}
	var ps []Pinned
	for _, pid := range esc {
		p, ok := Pin(pid, func(s Stat) bool { return s.PPid == os.Getpid() })
		if !ok {
			t.Fatalf("pin %d", pid)
		}
		ps = append(ps, p)
		p.Signal(syscall.SIGKILL)
	}
	if left := WaitExit(ps, time.Now().Add(10*time.Second)); len(left) > 0 {
		t.Fatalf("escapees alive after SIGKILL: %v", left)
	}
	for _, p := range ps {
		p.Close()
	}
	// Reaped by a pass: this one or one on SIGCHLD. A pass that runs
	// while another reaps may miss an entry of the children list, so
	// the check passes again until both are gone (a bounded while).
	for _, pid := range esc {
		if err := hivetest.Wait(10*time.Second, func() error {
			r.Reap()
			if st, ok := Read(pid); ok {
				return fmt.Errorf("state %c", st.State)
			}
			return nil
		}); err != nil {
			t.Errorf("escapee %d not reaped: %v", pid, err)
		}
	}
	if r.Reaped() < 32 {
		t.Errorf("Reaped() = %d, want at least the 30 sleeps and the 2 escapees", r.Reaped())
	}
}

// startOutput runs cmd through Start and Wait and returns its stdout.
func startOutput(cmd *exec.Cmd) ([]byte, error) {
	var b bytes.Buffer
	cmd.Stdout = &b
	if err := Start(cmd); err != nil {
		return nil, err
	}
	err := Wait(cmd)
	return b.Bytes(), err
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestCgroup2 reads where this process's cgroup v2 directory is: it must
// exist, and hold this process.
func TestCgroup2(t *testing.T) {
	dir, writable := Cgroup2()
	if dir == "" {
		t.Skip("no cgroup v2 hierarchy here")
	}
	b, err := os.ReadFile(dir + "/cgroup.procs")
	if err != nil {
		t.Fatalf("cgroup %s: %v", dir, err)
	}
	if !contains(fieldsInts(string(b)), os.Getpid()) {
		t.Errorf("cgroup %s does not list this process %d", dir, os.Getpid())
	}
	t.Logf("cgroup v2 at %s, writable %v", dir, writable)
}

func fieldsInts(s string) []int {
	var out []int
	for _, f := range strings.Fields(s) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}
