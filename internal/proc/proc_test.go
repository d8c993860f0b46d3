package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
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
