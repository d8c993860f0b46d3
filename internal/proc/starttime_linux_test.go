package proc

import (
	"os/exec"
	"testing"
)

// TestStartTimedAgreesWithProc: the start time StartTimed gives a
// process without reading /proc is the one /proc shows for it, start
// after start (the clock was checked once, and agreed).
func TestStartTimedAgreesWithProc(t *testing.T) {
	for i := 0; i < 200; i++ {
		cmd := exec.Command("/bin/sh", "-c", "exit 0")
		got, err := StartTimed(cmd)
		if err != nil {
			t.Fatal(err)
		}
		st, ok := Read(cmd.Process.Pid) // not waited for: still there
		if err := Wait(cmd); err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("start %d: pid %d not in /proc before its wait", i, cmd.Process.Pid)
		}
		if got != st.Start {
			t.Fatalf("start %d: StartTimed says %d, /proc says %d", i, got, st.Start)
		}
	}
	if c := tickCheck.Load(); c != 1 {
		t.Fatalf("the clock's check is %d, want 1 (agreed with /proc)", c)
	}
}

// TestStartTimedFailedStart: a start that fails gives its error and no
// time.
func TestStartTimedFailedStart(t *testing.T) {
	got, err := StartTimed(exec.Command(t.TempDir() + "/no-such-program"))
	if err == nil || got != 0 {
		t.Fatalf("StartTimed of a missing program = %d, %v; want 0 and an error", got, err)
	}
}
