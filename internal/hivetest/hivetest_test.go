package hivetest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"

	"go.uber.org/goleak"
)

// The harness's own tests run a built hive (Main's build mode, which the
// benchmarks use too).
// TestMain: a hive built on first use; once the tests passed, every
// goroutine the harness started (a daemon's waiter) has ended.
func TestMain(m *testing.M) {
	hivetest.Main(m, nil, func() error { return goleak.Find() })
}

var errNotYet = errors.New("not yet")

func TestWaitReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	err := hivetest.Wait(10*time.Second, func() error {
		if calls++; calls < 4 {
			return errNotYet
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Errorf("Wait: %v after %d calls, want nil after 4", err, calls)
	}
}

func TestWaitTimesOutWithTheLastError(t *testing.T) {
	calls := 0
	start := time.Now()
	err := hivetest.Wait(50*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("call %d: %w", calls, errNotYet)
	})
	if !errors.Is(err, hivetest.ErrTimeout) || !errors.Is(err, errNotYet) {
		t.Fatalf("Wait: %v, want ErrTimeout and the condition's error", err)
	}
	if want := fmt.Sprintf("call %d: not yet", calls); !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Wait: %q, want it to end with the last error %q", err, want)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond || calls < 2 {
		t.Errorf("Wait gave up after %v and %d calls, want the whole 50ms and a call at its end", waited, calls)
	}
}

func TestWaitStopsOnAbort(t *testing.T) {
	calls := 0
	err := hivetest.Wait(time.Minute, func() error {
		if calls++; calls < 2 {
			return errNotYet
		}
		return hivetest.Abort(os.ErrClosed)
	})
	if err != os.ErrClosed || calls != 2 {
		t.Errorf("Wait: %v after %d calls, want os.ErrClosed after 2", err, calls)
	}
	if hivetest.Abort(nil) != nil {
		t.Error("Abort(nil) is not nil")
	}
}

// fatalTB records the first Fatalf and ends its goroutine, as a test's
// FailNow would.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls body with f in a goroutine of its own and waits for it.
func (f *fatalTB) run(body func(testing.TB)) {
	var wg sync.WaitGroup
	wg.Go(func() { body(f) })
	wg.Wait()
}

func TestEventuallyFailsNamingWhatAndTheLastError(t *testing.T) {
	f := &fatalTB{TB: t}
	returned := false
	f.run(func(tb testing.TB) {
		hivetest.Eventually(tb, 20*time.Millisecond, "the moon", func() error { return errNotYet })
		returned = true
	})
	if returned || !strings.Contains(f.msg, "waiting for the moon") || !strings.Contains(f.msg, "timed out after 20ms: not yet") {
		t.Errorf("Eventually returned %v, failed with %q", returned, f.msg)
	}
	f = &fatalTB{TB: t}
	f.run(func(tb testing.TB) {
		hivetest.Eventually(tb, time.Minute, "the sun", func() error { return nil })
		returned = true
	})
	if !returned || f.msg != "" {
		t.Errorf("Eventually of a condition that holds: returned %v, failed with %q", returned, f.msg)
	}
}

func TestAliveAndGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !hivetest.Alive(pid) || hivetest.Gone(pid)() == nil {
		t.Errorf("a running sleep: Alive %v, Gone %v", hivetest.Alive(pid), hivetest.Gone(pid)())
	}
	cmd.Process.Kill()
	// Not waited for yet: a zombie, which does not run.
	hivetest.Eventually(t, 10*time.Second, "the killed sleep to end", hivetest.Gone(pid))
	cmd.Wait()
	if hivetest.Alive(0) || hivetest.Alive(-1) {
		t.Error("Alive of pid 0 or -1")
	}
}

// Kill ends a process by its pid alone; Signal to a process that has
// been waited for says so.
func TestKillAndSignalByPid(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := hivetest.Kill(pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("Kill(%d): %v", pid, err)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Success() {
		t.Errorf("the killed sleep ended with %v, want killed", err)
	}
	if err := hivetest.Signal(pid, os.Kill); err == nil {
		t.Errorf("Signal to a reaped process %d succeeded", pid)
	}
}

// Symlink plants a link; one it cannot make fails the test (on unix,
// where symlinks can always be made), naming the link.
func TestSymlinkPlantsOrFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("on Windows a symlink that cannot be made skips the test")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	hivetest.Symlink(t, "target", link)
	if got, err := os.Readlink(link); err != nil || got != "target" {
		t.Fatalf("Readlink(%s) = %q, %v; want target", link, got, err)
	}
	f := &fatalTB{TB: t}
	returned := false
	f.run(func(tb testing.TB) {
		hivetest.Symlink(tb, "target", link) // it exists
		returned = true
	})
	if returned || !strings.Contains(f.msg, link) {
		t.Errorf("Symlink over an existing file: returned %v, failed with %q", returned, f.msg)
	}
}

func TestPidsFromLockFiles(t *testing.T) {
	dir := t.TempDir()
	if p := hivetest.DaemonPid(dir); p != 0 {
		t.Errorf("DaemonPid without a lock file: %d", p)
	}
	os.WriteFile(filepath.Join(dir, "daemon.lock"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	if p := hivetest.DaemonPid(dir); p != os.Getpid() {
		t.Errorf("DaemonPid: %d, want %d", p, os.Getpid())
	}
	// A live process that is not this dir's holder is not its holder.
	os.WriteFile(filepath.Join(dir, "holder.sock.lock"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
	if p := hivetest.HolderPid(dir); p != 0 {
		t.Errorf("HolderPid of a lock file naming the test: %d, want 0", p)
	}
}

// The whole way: a built hive's daemon on a state dir of its own, the CLI
// and an MCP session through a bridge; the daemon and its holder stop.
func TestDaemonSessionAndCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hive")
	}
	state := hivetest.StateDir(t)
	d := hivetest.StartDaemon(t, state)
	if d.Pid != hivetest.DaemonPid(state) || !hivetest.Alive(d.Pid) {
		t.Fatalf("daemon pid %d, lock file %d", d.Pid, hivetest.DaemonPid(state))
	}
	s := hivetest.Connect(t, state, t.TempDir())
	var st struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
	}
	s.MustCall("run", map[string]any{"cmd": "exit 3", "wait_seconds": 30}, &st)
	if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Errorf("run exit 3: %+v", st)
	}
	if _, isErr := s.Call("status", map[string]any{"id": "no-such-job"}, nil); !isErr {
		t.Error("status of no job: not a tool error")
	}
	out, err := hivetest.Run(t, state, "ps", "--all", "--json")
	if err != nil || !strings.Contains(out, `"exit_code": 3`) {
		t.Errorf("hive ps: %v %s", err, out)
	}
	holder := hivetest.HolderPid(state)
	if err := d.Stop(); err != nil {
		t.Errorf("the daemon's exit on SIGTERM: %v; log:\n%s", err, d.Log())
	}
	if hivetest.Alive(d.Pid) {
		t.Errorf("after Stop: daemon %d alive", d.Pid)
	}
	// The holder, told to quit, lets its socket and lock go at once and
	// exits once its guard has looked for what is left (a scan of the
	// process table).
	if holder != 0 {
		hivetest.Eventually(t, 10*time.Second, "the holder's exit after the daemon's", hivetest.Gone(holder))
	}
}
