//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

func TestReadAndLive(t *testing.T) {
	if !Supported {
		t.Skip("no process table here")
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "PROC_TEST_MARK=yes")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	st, ok := Read(pid)
	if !ok || !st.Alive() || st.Pgrp != pid || st.Session != pid || st.Start == 0 {
		t.Fatalf("stat of a setsid child: %+v %v", st, ok)
	}
	found := Live(func(s Stat) bool { return s.Session == pid })
	if len(found) != 1 || found[0].Pid != pid {
		t.Errorf("Live by session: %+v", found)
	}
	if !HasEnv(pid, "PROC_TEST_MARK=yes") || HasEnv(pid, "PROC_TEST_MARK=no") {
		t.Error("HasEnv")
	}
	if v, ok := Getenv(pid, "PROC_TEST_MARK"); !ok || v != "yes" {
		t.Errorf("Getenv(PROC_TEST_MARK) = %q, %v; want yes", v, ok)
	}
	if v, ok := Getenv(pid, "PROC_TEST_MAR"); ok {
		t.Errorf("Getenv of a prefix of a name = %q, want none", v)
	}
	cmd.Process.Kill()
	// Unreaped, it is a zombie: not alive, not listed.
	for {
		st, ok = Read(pid)
		if !ok || !st.Alive() {
			break
		}
	}
	if len(Live(func(s Stat) bool { return s.Pid == pid })) != 0 {
		t.Error("a zombie is listed as live")
	}
	cmd.Wait()
	if _, ok := Read(pid); ok {
		t.Error("a reaped process can be read")
	}
}

// Stat.CPU grows while a process runs and stands still while it is
// stopped: what a caller waiting on another process reads as progress.
func TestCPU(t *testing.T) {
	if !Supported {
		t.Skip("no process table here")
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var last uint64
	hivetest.Eventually(t, 20*time.Second, "a busy process to be charged time", func() error {
		st, ok := Read(pid)
		if !ok || st.CPU == 0 {
			return fmt.Errorf("stat %+v %v", st, ok)
		}
		last = st.CPU
		return nil
	})
	hivetest.Eventually(t, 20*time.Second, "its time to grow", func() error {
		if st, _ := Read(pid); st.CPU <= last {
			return fmt.Errorf("cpu %d, was %d", st.CPU, last)
		}
		return nil
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	hivetest.Eventually(t, 20*time.Second, "it to stop", func() error {
		if st, _ := Read(pid); st.State != 'T' {
			return fmt.Errorf("state %q", st.State)
		}
		return nil
	})
	st1, _ := Read(pid)
	// A stopped process is charged nothing more: what is checked is the
	// passing of time (ten ticks of the clock), so here a sleep is the
	// event.
	time.Sleep(100 * time.Millisecond)
	if st2, _ := Read(pid); st2.CPU != st1.CPU {
		t.Errorf("a stopped process was charged %d ticks more", st2.CPU-st1.CPU)
	}
	syscall.Kill(pid, syscall.SIGCONT)
}
