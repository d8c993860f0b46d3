package proc

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A process's exit status is told to a holder of its pidfd once its
// parent reaps it, not before: for a child of this process, and for one
// that is not (another process's child, reaped by that one), whose
// reap the runtime's poller sees on the pidfd.
func TestPidfdExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		cmd.Wait()
		t.Skipf("no pidfd here: %v", err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(10 * time.Second)
	for !PidfdExited(fd) {
		if time.Now().After(deadline) {
			t.Fatal("the child's pidfd never polled readable")
		}
		time.Sleep(time.Millisecond) // a zombie waits for this test's reap: nothing to wait on but the poll
	}
	if _, reaped, err := PidfdExit(fd); errors.Is(err, errors.ErrUnsupported) {
		cmd.Wait()
		t.Skipf("this kernel does not tell a pidfd's exit: %v", err)
	} else if err != nil || reaped {
		t.Fatalf("a zombie not reaped yet: reaped %v, err %v", reaped, err)
	}
	cmd.Wait()
	ws, reaped, err := PidfdExit(fd)
	if err != nil || !reaped || !ws.Exited() || ws.ExitStatus() != 7 {
		t.Fatalf("after the reap: status %v exited %v code %d, reaped %v, err %v", ws, ws.Exited(), ws.ExitStatus(), reaped, err)
	}

	// Not a child: the subshell's parent, sh, reaps it. (A background
	// job's stdin is /dev/null: it waits for a file instead.)
	gate := filepath.Join(t.TempDir(), "gate")
	sh := exec.Command("sh", "-c", "(while [ ! -e "+gate+" ]; do sleep 0.01; done; exit 5) & echo $!; wait")
	out, _ := sh.StdoutPipe()
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer sh.Wait()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	gfd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(gfd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gate, nil, 0o600) // the subshell exits 5; sh, in its wait, reaps it
	f.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got syscall.WaitStatus
	var gotErr error
	err = rc.Read(func(fd uintptr) bool {
		var reaped bool
		got, reaped, gotErr = PidfdExit(int(fd))
		return reaped || gotErr != nil
	})
	if err != nil || gotErr != nil || !got.Exited() || got.ExitStatus() != 5 {
		t.Fatalf("a process another one reaped: status %v, err %v / %v", got, err, gotErr)
	}
}
