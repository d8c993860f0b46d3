package proc

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// Busy is true of a process that spins and false of one that sleeps or
// is stopped: what the holder's client reads as "at work" when the clock
// has charged a holder nothing.
func TestBusy(t *testing.T) {
	spin := exec.Command("sh", "-c", "while :; do :; done")
	sleep := exec.Command("sleep", "60")
	for _, c := range []*exec.Cmd{spin, sleep} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	hivetest.Eventually(t, 20*time.Second, "the spinning process to be busy", func() error {
		if !Busy(spin.Process.Pid) {
			return errors.New("not busy")
		}
		return nil
	})
	hivetest.Eventually(t, 20*time.Second, "the sleeping process to be idle", func() error {
		if Busy(sleep.Process.Pid) {
			return errors.New("busy")
		}
		return nil
	})
	if err := syscall.Kill(spin.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 20*time.Second, "the stopped process to be idle", func() error {
		if Busy(spin.Process.Pid) {
			return errors.New("busy")
		}
		return nil
	})
	syscall.Kill(spin.Process.Pid, syscall.SIGCONT)
	if Busy(1 << 30) {
		t.Error("a pid that does not exist is busy")
	}
}
