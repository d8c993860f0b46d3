package reliability

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
)

// treeCmd starts a tree three levels deep (bash, sh, sleep): one branch
// ignores SIGTERM and SIGINT (its sleep inherits that), one does not, one
// leaves with setsid into a session of its own, and one is orphaned at
// once by a double fork. Each branch prints a line once it is in place:
// "p SH SLEEP" for the first two, "s PID" for the escape after it called
// setsid, "d PID" for the double fork.
const treeCmd = `sh -c 'trap "" TERM INT; sleep 3600 & echo "p $$ $!"; wait' &
sh -c 'sleep 3600 & echo "p $$ $!"; wait' &
setsid sh -c 'echo "s $$"; exec sleep 3600' &
( ( sleep 3600 & echo "d $!" ) & )
wait`

// treeLines is how many lines treeCmd prints once its whole tree is up.
const treeLines = 4

// scrubbedBranch is the branch added where each job has a cgroup: a
// setsid escape that also drops the job's marks (env -i), so that only
// its cgroup says whose it is. It prints "e PID".
const scrubbedBranch = `env -i setsid sh -c 'echo "e $$"; exec sleep 3600' &
`

// jobStarted is terminal_job_start's answer.
type jobStarted struct {
	JobID  string `json:"job_id"`
	Status string `json:"status"`
	Pid    int    `json:"pid"`
	Error  string `json:"error"`
}

// jobLogs is terminal_job_logs' answer (stdout only).
type jobLogs struct {
	Status string `json:"status"`
	Stdout *struct {
		Data       string `json:"data"`
		NextOffset int64  `json:"next_offset"`
	} `json:"stdout"`
}

// waitOutputLines waits (terminal_job_logs with wait_for_output, no
// polling) until job id has printed n lines on stdout, and returns them.
func waitOutputLines(t *testing.T, s *hivetest.Session, id string, n int) []string {
	t.Helper()
	var out strings.Builder
	var off int64
	hivetest.Eventually(t, 30*time.Second, fmt.Sprintf("%d lines of job %s", n, id), func() error {
		var lg jobLogs
		s.MustCall("terminal_job_logs", map[string]any{"job_id": id, "since_offset": off, "stream": "stdout",
			"wait_for_output": true, "wait_timeout_sec": 10}, &lg)
		if lg.Stdout != nil {
			out.WriteString(lg.Stdout.Data)
			off = lg.Stdout.NextOffset
		}
		if got := strings.Count(out.String(), "\n"); got < n {
			err := fmt.Errorf("job %s: %d lines, want %d: %q", id, got, n, out.String())
			if lg.Status != "running" {
				return hivetest.Abort(fmt.Errorf("job %s ended (%s) before its tree was up: %w", id, lg.Status, err))
			}
			return err
		}
		return nil
	})
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// jobProcs lists the live processes carrying job id's mark
// (HIVE_JOB_ID=id), split into members of group pgid and the others.
func jobProcs(id string, pgid int) (inGroup, outside []int) {
	for _, st := range proc.Live(func(s proc.Stat) bool { return proc.HasEnv(s.Pid, "HIVE_JOB_ID="+id) }) {
		if st.Pgrp == pgid {
			inGroup = append(inGroup, st.Pid)
		} else {
			outside = append(outside, st.Pid)
		}
	}
	return inGroup, outside
}

// killAndWait SIGKILLs pids (processes this test's jobs started) and
// waits until none is alive.
func killAndWait(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		hivetest.Kill(pid)
	}
	hivetest.Eventually(t, 10*time.Second, "the killed processes to end", func() error {
		for _, pid := range pids {
			if err := hivetest.Gone(pid)(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Row 2: killing a job kills its whole tree, three levels deep, a branch
// that ignores SIGTERM and SIGINT included, and a branch that left the
// group with setsid and one orphaned by a double fork: the daemon is their
// subreaper and finds them by the job's marks. No process of the job is
// left, in its group or outside, no zombie of the daemon either, and the
// job ends killed, every escapee counted in leftover_processes.
func TestRow02TreeKill(t *testing.T) {
	n := count(10, 100)
	const batch = 10 // trees up at once
	dir := newStateDir(t)
	d := startDaemon(t, dir, "--grace", "1s")
	base := d.Settled()
	s := d.MCP()
	cmd, lines, pids := treeCmd, treeLines, 6
	v, err := d.Call(proto.Request{Cmd: proto.CmdVersion})
	if err != nil {
		t.Fatal(err)
	}
	scrubbed := v.EscapeTracking == proc.TrackCgroup
	if scrubbed {
		cmd, lines, pids = scrubbedBranch+treeCmd, treeLines+1, 7
	}
	survivors, escapes, killed, counted, zombies := 0, 0, 0, 0, 0
	var slowest time.Duration
	for done := 0; done < n; {
		k := min(batch, n-done)
		jobs := make([]jobStarted, k)
		unmarked := make([]proc.Pinned, k) // the scrubbed branches' sh, then sleep
		for i := range jobs {
			s.MustCall("terminal_job_start", map[string]any{"cmd": cmd}, &jobs[i])
			if jobs[i].Status != "running" || jobs[i].Pid == 0 {
				t.Fatalf("job %d: %+v", done+i, jobs[i])
			}
		}
		for i, j := range jobs {
			printed := waitOutputLines(t, s, j.JobID, lines)
			if got := len(readPids(strings.Join(printed, " "))); got != pids {
				t.Fatalf("job %s: tree printed %q, want %d pids", j.JobID, printed, pids)
			}
			for _, l := range printed {
				if pid, ok := strings.CutPrefix(l, "e "); ok {
					p, ok := proc.Pin(readPids(pid)[0], nil)
					if !ok {
						t.Fatalf("job %s: the escape without marks (%s) is not running", j.JobID, pid)
					}
					unmarked[i] = p
				}
			}
		}
		t0 := time.Now()
		for _, j := range jobs {
			s.MustCall("kill", map[string]any{"id": j.JobID}, nil)
		}
		for _, j := range jobs {
			var st task
			s.MustCall("status", map[string]any{"id": j.JobID, "wait_seconds": 30}, &st)
			counted += st.Leftover
			slowest = max(slowest, time.Since(t0))
			if st.Status == "killed" {
				killed++
			} else {
				t.Errorf("job %s: %s after kill, want killed: %+v", j.JobID, st.Status, st)
			}
			in, out := jobProcs(j.JobID, j.Pid)
			survivors += len(in)
			escapes += len(out)
			if len(in) > 0 {
				t.Errorf("job %s: %d processes survive in its group: %v", j.JobID, len(in), in)
			}
			if len(out) > 0 {
				t.Errorf("job %s: %d processes that left its group survive: %v", j.JobID, len(out), out)
			}
			killAndWait(t, append(in, out...)) // what survived, if anything
		}
		for i, p := range unmarked {
			if !scrubbed {
				break
			}
			if left := proc.WaitExit([]proc.Pinned{p}, time.Now().Add(time.Second)); len(left) > 0 { // at once if gone
				escapes++
				t.Errorf("job %s: its escape without marks (%d) survives", jobs[i].JobID, p.Pid)
				p.Signal(syscall.SIGKILL)
			}
			p.Close()
		}
		// Every job of the batch has ended: what it left was reaped.
		if z := daemonZombies(d.Pid); len(z) > 0 {
			zombies = max(zombies, len(z))
			t.Errorf("the batch's jobs ended, and the daemon has zombie children: %v", z)
		}
		done += k
	}
	s.Close()
	escapeKinds := "a setsid escape, a double fork"
	if scrubbed {
		escapeKinds = "a setsid escape, a double fork, an env -i setsid escape (found by its cgroup)"
	}
	figure(t, 2, "tree kill ×%d (3 levels, a branch ignoring SIGTERM/SIGINT, %s, --grace 1s; escape_tracking %s): %d survivors in the group, %d outside it, %d/%d ended killed, slowest kill→end %v; %d leftover processes counted (escapees and what the group had left), %d zombies after a batch",
		n, escapeKinds, v.EscapeTracking, survivors, escapes, killed, n, slowest.Round(time.Millisecond), counted, zombies)
	d.CheckBaseline(base)
	if left := marked(dir); len(left) > 0 {
		t.Errorf("%d processes of the jobs left: %v", len(left), left)
	}
}
