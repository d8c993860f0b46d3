package proc

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/hivetest"
)

// escapee starts, through Start, a shell that leaves a setsid sleep
// behind, and returns the sleep's pid (adopted by this process once the
// shell has exited).
func escapee(t *testing.T) int {
	t.Helper()
	out, err := startOutput(exec.Command("sh", "-c", "setsid sleep 3600 >/dev/null 2>&1 & echo $!"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("escapee printed %q", out)
	}
	if st, ok := Read(pid); !ok || st.PPid != os.Getpid() {
		t.Fatalf("escapee %d: parent %d, want this process", pid, st.PPid)
	}
	return pid
}

func pin(t *testing.T, pid int) Pinned {
	t.Helper()
	p, ok := Pin(pid, func(s Stat) bool { return s.PPid == os.Getpid() })
	if !ok {
		t.Fatalf("pin %d", pid)
	}
	return p
}

// reaped is a condition for hivetest.Wait: pid is no longer in the
// process table (reaped; a zombie is still there).
func reaped(pid int) func() error {
	return func() error {
		if st, ok := Read(pid); ok {
			return fmt.Errorf("process %d is still there: state %c", pid, st.State)
		}
		return nil
	}
}

// within fails the test unless f returns before the deadline: what f
// does must not wait for the start held in flight.
func within(t *testing.T, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s waited for a start in flight", what)
	}
}

// TestSlowStartBlocksNothing: while one Start is in flight for long (its
// exec hangs: the hook holds it), a reaper pass, another Start and Wait,
// and the end of a job's escapees (Terminate, which reaps them) all go on;
// a zombie the pass had to leave for the start in flight is reaped once
// it is over.
func TestSlowStartBlocksNothing(t *testing.T) {
	r, err := NewReaper()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pidEsc := escapee(t)   // ended as a job's escapee, during the slow start
	pidLater := escapee(t) // killed during the slow start, reaped after it

	slow := exec.Command("true")
	inFlight, release := make(chan struct{}), make(chan struct{})
	startHook = func(cmd *exec.Cmd) {
		if cmd == slow {
			close(inFlight)
			<-release
		}
	}
	slowDone := make(chan error, 1)
	go func() {
		err := Start(slow)
		if err == nil {
			err = Wait(slow)
		}
		slowDone <- err
	}()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		<-slowDone
		startHook = nil
	}()
	<-inFlight

	const limit = 10 * time.Second
	within(t, "a reaper pass", limit, func() { r.Reap() })
	within(t, "another Start and Wait", limit, func() {
		if out, err := startOutput(exec.Command("echo", "hi")); err != nil || string(out) != "hi\n" {
			t.Errorf("echo: %q, %v", out, err)
		}
	})
	pe := pin(t, pidEsc)
	within(t, "a job's escape sweep", limit, func() { Terminate([]Pinned{pe}, 0) })
	if st, ok := Read(pidEsc); ok {
		t.Errorf("escapee %d ended during a start in flight is left as %c", pidEsc, st.State)
	}

	p := pin(t, pidLater)
	p.Signal(syscall.SIGKILL)
	WaitExit([]Pinned{p}, time.Now().Add(limit))
	p.Close()
	r.Reap() // it must leave the zombie: a start is in flight
	close(release)
	released = true
	if err := <-slowDone; err != nil {
		t.Errorf("the slow start: %v", err)
	}
	slowDone <- nil // for the deferred receive
	if err := hivetest.Wait(limit, reaped(pidLater)); err != nil {
		t.Errorf("zombie %d left for the start in flight is not reaped after it: %v", pidLater, err)
	}
}

// TestWaitSparesReusedPid: once a command is waited for its pid is free,
// and a child started next may get it; the first command's Wait must not
// drop that child's registration (the reaper would then take its status).
func TestWaitSparesReusedPid(t *testing.T) {
	a := exec.Command("true")
	if err := Start(a); err != nil {
		t.Fatal(err)
	}
	pid := a.Process.Pid
	a.Wait() // as in Wait, before its forget: pid is free now
	// A child that got pid pid, started through Start meanwhile.
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	b := &exec.Cmd{Process: proc}
	directMu.Lock()
	direct[pid] = b
	directMu.Unlock()
	defer forget(b)
	Wait(a) // the forget of a's Wait
	if !isDirect(pid) {
		t.Fatal("the Wait of an earlier command with the same pid dropped a newer child's registration")
	}
}

// TestTerminateReapsMissedEscapees: the children file a pass reads may
// miss an entry while children come and go; escapees that Terminate ends
// are reaped all the same (by their pidfds), not left as zombies until
// some later SIGCHLD.
func TestTerminateReapsMissedEscapees(t *testing.T) {
	listChildren = func(int) []int { return nil } // every read misses every entry
	r, err := NewReaper()
	if err != nil {
		t.Fatal(err)
	}
	var ps []Pinned
	var esc []int
	for range 3 {
		pid := escapee(t)
		esc = append(esc, pid)
		ps = append(ps, pin(t, pid))
	}
	if n := Terminate(ps, 0); n != 3 {
		t.Errorf("Terminate = %d, want 3", n)
	}
	for _, pid := range esc {
		if st, ok := Read(pid); ok {
			t.Errorf("escapee %d: state %c after Terminate, want reaped", pid, st.State)
		}
	}
	if r.Reaped() != 3 {
		t.Errorf("Reaped() = %d, want 3", r.Reaped())
	}
	r.Close()
	listChildren = childPids
	for _, pid := range esc { // whatever the test left
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// The children file is opened once and read again from its start at each
// pass: a child adopted since the last pass is listed, one reaped since
// is not, and no pass opens the file again.
func TestChildPidsReadAgain(t *testing.T) {
	r, err := NewReaper()
	if err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	defer r.Close()
	self := os.Getpid()
	childPids(self)
	children.Lock()
	opens := children.opens
	children.Unlock()
	pid := escapee(t)
	if !slices.Contains(childPids(self), pid) {
		t.Fatalf("the adopted child %d is not listed: %v", pid, childPids(self))
	}
	syscall.Kill(pid, syscall.SIGKILL) // the reaper reaps it
	if err := hivetest.Wait(10*time.Second, func() error {
		if slices.Contains(childPids(self), pid) {
			return fmt.Errorf("child %d still listed", pid)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	children.Lock()
	defer children.Unlock()
	if children.opens != opens {
		t.Errorf("the children file was opened %d times more", children.opens-opens)
	}
}

// TestExited: Exited is false while a child runs, true once it has exited
// and before it is reaped, and reaps nothing (the wait after it gets the
// child's exit status); false once the child is reaped.
func TestExited(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read x; exit 3")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Exited(pid) {
		t.Fatal("Exited of a running child: true")
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	in.Close() // the shell's read ends: it exits 3
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, 10_000); err != unix.EINTR {
			break
		}
	}
	if fds[0].Revents&unix.POLLIN == 0 {
		t.Fatal("the child did not exit within 10 s")
	}
	if !Exited(pid) || !Exited(pid) {
		t.Fatal("Exited of an exited child: false")
	}
	err = cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the wait after Exited: %v, %v: want exit status 3 (Exited reaped it?)", err, cmd.ProcessState)
	}
	if Exited(pid) {
		t.Fatal("Exited of a reaped child: true")
	}
}
