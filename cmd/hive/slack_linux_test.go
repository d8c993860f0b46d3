package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// timerSlack is process pid's timer slack in ns (its main thread's).
func timerSlack(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/timerslack_ns")
	if err != nil {
		t.Skipf("no timer slack to read here: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("/proc/%d/timerslack_ns: %q", pid, b)
	}
	return n
}

// The daemon and its holder run with proc.HiveSlack (the daemon,
// started with this process's slack, executes itself again with it; the
// holder inherits it), and the jobs they start get back the slack the
// daemon was started with: a job the daemon starts and its holder keeps,
// and one the holder starts (limits), in the same pid as told.
func TestTimerSlack(t *testing.T) {
	mine := timerSlack(t, os.Getpid())
	if mine >= proc.HiveSlack {
		t.Skipf("this process's timer slack is %d ns already", mine)
	}
	state := hivetest.StateDir(t)
	d := hivetest.StartDaemon(t, state)
	if got := timerSlack(t, d.Pid); got != proc.HiveSlack {
		t.Errorf("the daemon's timer slack: %d ns, want %d", got, proc.HiveSlack)
	}
	// Executed again from /proc/self/exe, it keeps its name (ps, top and
	// pgrep show it), in every thread.
	want := filepath.Base(hivetest.Bin(t).Path)
	want = want[:min(len(want), 15)]
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(d.Pid) + "/task")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the daemon's threads: %v", err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(d.Pid) + "/task/" + task.Name() + "/comm")
		if err != nil {
			continue // a thread that ended
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("the daemon's thread %s is named %q, want %q (its executable's name)", task.Name(), got, want)
		}
	}
	if h := hivetest.HolderPid(state); h == 0 {
		t.Error("no holder")
	} else if got := timerSlack(t, h); got != proc.HiveSlack {
		t.Errorf("the holder's timer slack: %d ns, want %d", got, proc.HiveSlack)
	}
	for _, leg := range []struct {
		name string
		args []string
	}{
		{"the daemon's", nil},
		{"the holder's", []string{"--pids", "100"}},
	} {
		if leg.args != nil {
			// The holder's spawn takes a job with limits; where they
			// cannot be set, that leg has nothing to show.
			if out, err := hivetest.Run(t, state, append([]string{"run"}, append(leg.args, "--", "true")...)...); err != nil {
				t.Logf("%s job: no job with limits here: %v: %s", leg.name, err, out)
				continue
			}
		}
		j := runWait(t, state, append(leg.args, "--", "cat", "/proc/self/timerslack_ns")...)
		if j.State != "done" {
			t.Errorf("%s job: %s, %v", leg.name, j.State, j.Error)
			continue
		}
		out, err := hivetest.Run(t, state, "logs", j.ID)
		if err != nil {
			t.Fatalf("hive logs: %v: %s", err, out)
		}
		if got := strings.TrimSpace(out); got != strconv.FormatInt(mine, 10) {
			t.Errorf("%s job's timer slack: %q ns, want this process's %d", leg.name, got, mine)
		}
	}
}
