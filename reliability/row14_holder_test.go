package reliability

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/proto"
)

// Row 14: the holder of the jobs. PTY sessions (a shell with a nohup'd
// and a foreground sleep each) and jobs that print run while the daemon
// is killed with -9, ×rounds: each new daemon adopts every one of them
// (same pid and start), each session takes input, each job's output
// goes on. Then the holder itself is killed with -9: every process of
// theirs is gone, the sessions and jobs read interrupted, and nothing
// else is signalled (a reused group id planted on purpose survives).
func TestRow14Holder(t *testing.T) {
	rounds, nSess, nJobs := count(3, 10), count(6, 16), count(10, 50)
	dir := newStateDir(t)
	survivor, _ := plantReusedGroup(t)
	d := startDaemon(t, dir)
	s := d.MCP()
	var sess []shellSession
	for range nSess {
		sess = append(sess, openShell(t, s))
	}
	var jobs []string
	for range nJobs {
		var st struct {
			ID string `json:"id"`
		}
		s.MustCall("run", map[string]any{"cmd": "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done", "wait_seconds": 0}, &st)
		jobs = append(jobs, st.ID)
	}
	adopted := 0
	for round := range rounds {
		s.Close()
		d.Kill()
		d = startDaemon(t, dir)
		s = d.MCP()
		for i := range sess {
			ss := &sess[i]
			for _, p := range ss.procs {
				if st, ok := proc.Read(p.Pid); !ok || !st.Alive() || st.Start != p.Start {
					t.Fatalf("round %d: session %s: process %d is gone after the daemon's kill -9", round, ss.id, p.Pid)
				}
			}
			// It takes input: Ctrl-C ends the foreground sleep, the shell
			// answers, and a new foreground sleep starts.
			s.MustCall("terminal_pty_send", map[string]any{"session_id": ss.id, "keys": []string{"C-c"}, "wait_ms": 0}, nil)
			mark := "round-" + strconv.Itoa(round)
			var out ptyOutput
			s.MustCall("terminal_pty_send", map[string]any{"session_id": ss.id, "input": "echo " + mark + "\n", "wait_for": mark + "\\s"}, &out)
			if !out.Matched || !out.Running {
				t.Fatalf("round %d: session %s after the daemon's kill -9: %+v", round, ss.id, out)
			}
			s.MustCall("terminal_pty_send", map[string]any{"session_id": ss.id, "input": "bash -c 'echo FG=$$; exec sleep 3600'\n", "wait_for": `FG=\d+`}, &out)
			m := regexp.MustCompile(`FG=(\d+)`).FindStringSubmatch(out.Data)
			if m == nil {
				t.Fatalf("round %d: session %s: no new foreground sleep: %+v", round, ss.id, out)
			}
			pid, _ := strconv.Atoi(m[1])
			st, ok := proc.Read(pid)
			if !ok {
				t.Fatalf("round %d: session %s: the new foreground sleep %d is not running", round, ss.id, pid)
			}
			ss.procs[2] = st
		}
		resp, err := d.Call(proto.Request{Cmd: proto.CmdPs})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, j := range resp.Jobs {
			if j.State == "running" {
				running++
			}
		}
		if running != nJobs {
			t.Fatalf("round %d: %d of %d jobs running after the daemon's kill -9", round, running, nJobs)
		}
		adopted += running + len(sess)
	}
	h := hivetest.HolderPid(dir)
	if h == 0 {
		t.Fatal("no holder runs")
	}
	hivetest.Kill(h)
	t0 := time.Now()
	var left []int
	hivetest.Wait(30*time.Second, func() error { // the check follows
		left = left[:0]
		for _, ss := range sess {
			left = append(left, ss.left()...)
		}
		if len(left) > 0 {
			return fmt.Errorf("processes of sessions left: %v", left)
		}
		return noneMarked(dir)()
	})
	gone := time.Since(t0)
	if len(left) > 0 || len(marked(dir)) > 0 {
		t.Errorf("after the holder's kill -9: %d processes of sessions left, %d marked processes: %v %v", len(left), len(marked(dir)), left, marked(dir))
	}
	hivetest.Eventually(t, 20*time.Second, "the jobs to read interrupted", func() error {
		resp, err := d.Call(proto.Request{Cmd: proto.CmdPs, All: true})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, j := range resp.Jobs {
			// Recorded by the daemon that saw the holder die, naming it.
			if j.State == "interrupted" && strings.Contains(j.Error, fmt.Sprintf("the holder of the jobs (pid %d) died", h)) {
				n++
			}
		}
		if n != nJobs {
			return fmt.Errorf("%d of %d jobs interrupted after the holder's kill -9", n, nJobs)
		}
		return nil
	})
	if !hivetest.Alive(survivor) {
		t.Errorf("the unrelated process %d was signalled", survivor)
	}
	if ps, ok := proc.Read(survivor); !ok || !ps.Alive() {
		t.Errorf("the unrelated process %d is gone", survivor)
	}
	s.Close()
	figure(t, 14, "the holder: %d PTY sessions (each a shell, a nohup'd and a foreground sleep) and %d printing jobs across %d kill -9 of the daemon: %d adoptions, every session answering and every job running each time; kill -9 of the holder: %d processes left after %v, every job interrupted, the unrelated process alive: %v",
		nSess, nJobs, rounds, adopted, len(left), gone.Round(time.Millisecond), hivetest.Alive(survivor))
}
