package job

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/hivetools/hive/internal/hivetest"
)

// A stop ends the whole tree a job started, not only its first process:
// `cmd /c ping` leaves no ping behind (issue 21: a timeout or kill
// stopped only the top process while the meaning said the group was
// stopped).
func TestStopEndsTheProcessTree(t *testing.T) {
	comspec := filepath.Join(os.Getenv("SystemRoot"), "System32", "cmd.exe")
	cmd := exec.Command(comspec, "/c", "ping -n 60 127.0.0.1 >NUL")
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := attachTree(pid); err != nil {
		t.Fatalf("attachTree: %v", err)
	}
	v, ok := jobObjects.Load(pid)
	if !ok {
		t.Fatal("no job object recorded for the process")
	}
	job := v.(windows.Handle)
	hivetest.Eventually(t, 10*time.Second, "cmd and its ping in the job object", func() error {
		if n := activeProcesses(job); n < 2 {
			return fmt.Errorf("%d process(es) in the job object", n)
		}
		return nil
	})
	signalGroup(pid, sigInt)
	cmd.Wait()
	hivetest.Eventually(t, 10*time.Second, "the job object empty", func() error {
		if n := activeProcesses(job); n != 0 {
			return fmt.Errorf("%d process(es) still in the job object after the stop", n)
		}
		return nil
	})
	if n := cleanupGroup(pid, 0); n != 0 {
		t.Errorf("cleanupGroup ended %d after the tree was stopped, want 0", n)
	}
	if _, ok := jobObjects.Load(pid); ok {
		t.Error("the job object is still recorded after cleanupGroup")
	}
	if stoppedWhat != "its process tree" {
		t.Errorf("stoppedWhat %q", stoppedWhat)
	}
}

// What a job's process leaves running when it exits is ended at its end
// and counted, as the process group's leftovers are elsewhere.
func TestLeftoversOfTheTreeAreEnded(t *testing.T) {
	comspec := filepath.Join(os.Getenv("SystemRoot"), "System32", "cmd.exe")
	cmd := exec.Command(comspec, "/c", "start /b ping -n 60 127.0.0.1 >NUL")
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := attachTree(pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("attachTree: %v", err)
	}
	job, _ := jobObjects.Load(pid)
	cmd.Wait()
	if n := activeProcesses(job.(windows.Handle)); n < 1 {
		t.Skipf("the ping had ended before cmd did (%d active)", n)
	}
	if n := cleanupGroup(pid, 0); n < 1 {
		t.Errorf("cleanupGroup ended %d, want the ping counted", n)
	}
}
