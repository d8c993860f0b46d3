package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
)

// A job's processes that escape its group, a `setsid sleep` and a double
// fork `( ( sleep & ) & )`, die with it when it is killed, through the
// tool or the CLI, and the daemon (their subreaper) reaps them: no
// process and no zombie is left. `hive version --json` says so.
func TestEscapesKilledWithTheirJob(t *testing.T) {
	if !proc.Supported {
		t.Skip("no process table here")
	}
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	tracking := escapeTracking(t, state)
	if tracking != proc.TrackSubreaper && tracking != proc.TrackCgroup {
		t.Errorf("hive version --json: escape_tracking %q, want %q or %q", tracking, proc.TrackSubreaper, proc.TrackCgroup)
	}
	// With a cgroup per job, a process that also drops the marks (env -i)
	// is caught too; where the machine allows it, the holder must use it.
	cgroups := tracking == proc.TrackCgroup
	g, err := proc.OpenJobCgroups(t.TempDir())
	if (err == nil) != cgroups {
		t.Errorf("escape_tracking %q, but this machine's cgroups: %v", tracking, err)
	}
	g.Close()
	t.Logf("escape_tracking %q", tracking)
	// The jobs' parent, and so the subreaper that adopts their orphans,
	// is the holder of the jobs; the daemon where it starts its jobs
	// itself and the holder keeps them.
	daemon := hivetest.HolderPid(state)
	if daemon == 0 {
		t.Fatal("no holder of the jobs runs")
	}
	if _, keeps := holderInfo(t, state); keeps {
		daemon = hivetest.DaemonPid(state)
	}
	for _, via := range []string{"tool", "cli"} {
		t.Run(via, func(t *testing.T) {
			dir := t.TempDir()
			sid, dbl, scrub := filepath.Join(dir, "setsid"), filepath.Join(dir, "double"), filepath.Join(dir, "scrubbed")
			// The setsid escape writes its pid once in its own session.
			cmd := fmt.Sprintf(`setsid sh -c 'echo $$ > %s; exec sleep 1000' &
( ( sleep 1000 & echo $! > %s ) & )
`, sid, dbl)
			if cgroups { // no marks left to find it by: only its cgroup
				cmd += fmt.Sprintf("env -i setsid sh -c 'echo $$ > %s; exec sleep 1000' &\n", scrub)
			}
			cmd += "wait"
			var st taskStatus
			s.MustCall("run", map[string]any{"cmd": cmd, "wait_seconds": 0, "name": "esc-" + via}, &st)
			pids := []int{waitPidFile(t, sid), waitPidFile(t, dbl)}
			if cgroups {
				pids = append(pids, waitPidFile(t, scrub))
			}
			starts := make([]uint64, len(pids))
			for i, pid := range pids {
				ps, ok := proc.Read(pid)
				if !ok || !ps.Alive() {
					t.Fatalf("escapee %d is not running", pid)
				}
				starts[i] = ps.Start
			}
			// The double fork's parent goes (just after it wrote the pid
			// file): the holder adopts it.
			if err := hivetest.Wait(10*time.Second, func() error {
				if ps, _ := proc.Read(pids[1]); ps.PPid != daemon {
					return fmt.Errorf("double-forked %d: parent %d, want the jobs' parent %d", pids[1], ps.PPid, daemon)
				}
				return nil
			}); err != nil {
				t.Error(err)
			}
			if via == "tool" {
				s.MustCall("kill", map[string]any{"id": st.ID}, nil)
			} else if out, err := hivetest.Run(t, state, "kill", st.ID); err != nil {
				t.Fatalf("hive kill: %s %v", out, err)
			}
			var end struct {
				taskStatus
				Leftover int `json:"leftover_processes"`
			}
			s.MustCall("status", map[string]any{"id": st.ID, "wait_seconds": 30}, &end)
			if end.Status != "killed" || end.Leftover != len(pids) {
				t.Errorf("after kill: %s with %d leftover processes, want killed with %d (the escapees)", end.Status, end.Leftover, len(pids))
			}
			// Ended means ended: both are gone, reaped (no zombie), now.
			for i, pid := range pids {
				if ps, ok := proc.Read(pid); ok && ps.Start == starts[i] {
					t.Errorf("escapee %d still there after its job ended: state %c, parent %d", pid, ps.State, ps.PPid)
				}
			}
		})
	}
	if z := zombieChildren(daemon); len(z) > 0 {
		t.Errorf("zombie children of the daemon: %v", z)
	}
}

// escapeTracking is the running daemon's escape_tracking (hive version
// --json).
func escapeTracking(t *testing.T, state string) string {
	tracking, _ := holderInfo(t, state)
	return tracking
}

// holderInfo is what `hive version --json` says of escape tracking, and
// whether the daemon starts its jobs itself and its holder keeps them.
func holderInfo(t *testing.T, state string) (tracking string, keepsJobs bool) {
	t.Helper()
	out, err := hivetest.Run(t, state, "version", "--json")
	if err != nil {
		t.Fatal(out, err)
	}
	var v struct {
		EscapeTracking string `json:"escape_tracking"`
		Holder         *struct {
			KeepsJobs bool `json:"keeps_jobs"`
		} `json:"holder"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("hive version --json: %s: %v", out, err)
	}
	return v.EscapeTracking, v.Holder != nil && v.Holder.KeepsJobs
}

func zombieChildren(pid int) []int {
	var out []int
	for _, c := range proc.Children(pid) {
		if !c.Alive() {
			out = append(out, c.Pid)
		}
	}
	return out
}

// A job whose command starts hive for another state dir (its daemon
// auto-started, detached) does not take that daemon with it when it
// ends: the daemon is not the job's escapee (it carries no job marks).
func TestDaemonStartedByAJobOutlivesIt(t *testing.T) {
	if !proc.Supported {
		t.Skip("no process table here")
	}
	state := hivetest.StateDir(t)
	other := hivetest.StateDir(t)
	bin := hivetest.Bin(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var st taskStatus
	s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("%s HIVE_STATE_DIR=%s %s run -- true", strings.Join(bin.Env, " "), other, bin.Path), "wait_seconds": 30}, &st)
	if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("the job: %+v", st)
	}
	pid := hivetest.DaemonPid(other)
	if pid == 0 || !hivetest.Alive(pid) {
		t.Fatalf("the other state dir's daemon (pid %d) did not outlive the job that started it", pid)
	}
	if out, err := hivetest.Run(t, other, "ps", "--json"); err != nil {
		t.Fatalf("the other daemon does not answer: %v %s", err, out)
	}
}
