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
)

// ptyOpened is terminal_pty_open's answer.
type ptyOpened struct {
	SessionID string `json:"session_id"`
	Pid       int    `json:"pid"`
	Running   bool   `json:"running"`
}

// ptyOutput is the answer of terminal_pty_send and terminal_pty_read.
type ptyOutput struct {
	Data       string `json:"data"`
	NextOffset int64  `json:"next_offset"`
	Matched    bool   `json:"matched"`
	Running    bool   `json:"running"`
	Screen     string `json:"screen"`
}

// shellSession is a PTY session running bash with a nohup'd background
// sleep and a foreground sleep: each process by pid and start time.
type shellSession struct {
	id    string
	procs []proc.Stat // the shell, the nohup'd sleep, the foreground sleep
}

// openShell opens a PTY session and starts its two programs, waiting for
// the marker each prints once it runs.
func openShell(t *testing.T, s *hivetest.Session) shellSession {
	t.Helper()
	var o ptyOpened
	s.MustCall("terminal_pty_open", nil, &o)
	if !o.Running || o.Pid == 0 {
		t.Fatalf("terminal_pty_open: %+v", o)
	}
	pids := []int{o.Pid}
	for _, step := range []struct{ input, key string }{
		{"nohup sleep 3600 >/dev/null 2>&1 & echo BG=$!\n", "BG"},
		{"bash -c 'echo FG=$$; exec sleep 3600'\n", "FG"},
	} {
		var out ptyOutput
		s.MustCall("terminal_pty_send", map[string]any{"session_id": o.SessionID, "input": step.input, "wait_for": step.key + `=\d+`}, &out)
		m := regexp.MustCompile(step.key + `=(\d+)`).FindStringSubmatch(out.Data)
		if !out.Matched || m == nil {
			t.Fatalf("session %s: %q did not print %s=PID: %+v", o.SessionID, step.input, step.key, out)
		}
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	ss := shellSession{id: o.SessionID}
	for _, pid := range pids {
		st, ok := proc.Read(pid)
		if !ok || !st.Alive() {
			t.Fatalf("session %s: pid %d is not running", o.SessionID, pid)
		}
		ss.procs = append(ss.procs, st)
	}
	return ss
}

// left lists what still runs of the session: its processes by pid and
// start time, any process with its mark (HIVE_PTY_ID) and any in its
// kernel session.
func (ss shellSession) left() []int {
	seen := map[int]bool{}
	var out []int
	add := func(pid int) {
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	for _, p := range ss.procs {
		if st, ok := proc.Read(p.Pid); ok && st.Alive() && st.Start == p.Start {
			add(p.Pid)
		}
	}
	sid := ss.procs[0].Pid
	for _, st := range proc.Live(func(s proc.Stat) bool {
		return s.Session == sid || proc.HasEnv(s.Pid, "HIVE_PTY_ID="+ss.id)
	}) {
		add(st.Pid)
	}
	return out
}

// Row 8: PTY sessions are supervised like jobs. Each runs bash with a
// nohup'd background sleep and a foreground sleep. Half are closed with
// terminal_pty_close: nothing of them is left. With the other half open
// the daemon is killed with -9: the nohup'd sleeps outlive it; a new
// daemon on the same state dir ends every process of theirs, reports the
// sessions interrupted (reads still return their output), holds no
// session, and its goroutines and fds come back to its own baseline.
func TestRow08PTYCrashRecovery(t *testing.T) {
	n := count(8, 50) // at most half open at once: under the 32-session limit
	nClosed := n / 2
	dir := newStateDir(t)
	// Daemons that hold their sessions themselves: their crash path.
	// (With the holder, sessions outlive the daemon: row 14.)
	d := startDaemon(t, dir, "--hold-jobs=false")
	s := d.MCP()

	// (a) Closed by the client: nothing of theirs is left.
	var slowest time.Duration
	leftAfterClose := 0
	for range nClosed {
		ss := openShell(t, s)
		t0 := time.Now()
		s.MustCall("terminal_pty_close", map[string]any{"session_id": ss.id}, nil)
		slowest = max(slowest, time.Since(t0))
		if l := ss.left(); len(l) > 0 {
			leftAfterClose += len(l)
			t.Errorf("session %s: %d processes left after terminal_pty_close: %v", ss.id, len(l), l)
		}
	}

	// (b) Open when the daemon dies.
	var open []shellSession
	for range n - nClosed {
		open = append(open, openShell(t, s))
	}
	d.Kill()
	orphans := 0
	for _, ss := range open {
		// The nohup'd sleep ignores the hangup: it outlives the daemon.
		bg := ss.procs[1]
		if st, ok := proc.Read(bg.Pid); !ok || !st.Alive() || st.Start != bg.Start {
			t.Errorf("session %s: the nohup'd sleep %d died with the daemon; the row proves nothing for it", ss.id, bg.Pid)
			continue
		}
		orphans++
	}

	t0 := time.Now()
	d2 := startDaemon(t, dir, "--hold-jobs=false")
	var left []int
	hivetest.Wait(30*time.Second-time.Since(t0), func() error { // the check follows
		left = left[:0]
		for _, ss := range open {
			left = append(left, ss.left()...)
		}
		if len(left) > 0 {
			return fmt.Errorf("processes of the crashed sessions left: %v", left)
		}
		return nil
	})
	recovered := time.Since(t0)
	if len(left) > 0 {
		t.Errorf("%d processes of the crashed sessions still run 30 s after the restart: %v", len(left), left)
	}
	base := d2.Settled()

	s2 := d2.MCP()
	interrupted := regexp.MustCompile(`^session_id "pty_[0-9a-f]{8}": the session ended when the daemon stopped \(interrupted at \d\d:\d\d:\d\d\); its output is in ` +
		regexp.QuoteMeta(dir) + `/pty/pty_[0-9a-f]{8}\.pty$`)
	nInterrupted := 0
	for _, ss := range open {
		var out ptyOutput
		text := s2.MustCall("terminal_pty_read", map[string]any{"session_id": ss.id}, &out)
		note := strings.Trim(text[strings.LastIndexByte(text, '\n')+1:], "[]")
		if !interrupted.MatchString(note) || out.Running || !strings.Contains(out.Data, fmt.Sprintf("FG=%d", ss.procs[2].Pid)) {
			t.Errorf("session %s after the restart: read %+v, text %q; want its output and the interrupted note", ss.id, out, text)
			continue
		}
		text, isErr, err := s2.TryCall("terminal_pty_send", map[string]any{"session_id": ss.id, "input": "echo hi\n"}, nil)
		if err != nil || !isErr || !interrupted.MatchString(text) {
			t.Errorf("session %s after the restart: send = %q (error %v, %v); want the interrupted error", ss.id, text, isErr, err)
			continue
		}
		nInterrupted++
	}
	s2.Close()
	d2.CheckBaseline(base)
	atBaseline := !t.Failed()
	if st := d2.Stats(); st.PTYSessions != 0 {
		t.Errorf("the new daemon holds %d pty sessions, want 0", st.PTYSessions)
	}
	if m := marked(dir); len(m) > 0 {
		t.Errorf("%d processes still carry the state dir's mark: %v", len(m), m)
	}
	baseline := fmt.Sprintf("back to its baseline (%d goroutines, %d fds)", base.Goroutines, base.FDs)
	if !atBaseline {
		baseline = "NOT shown back to its baseline (see the errors)"
	}
	figure(t, 8, "%d PTY sessions with a foreground and a nohup'd process: %d closed (slowest close %v), %d crash-recovered (%d nohup'd processes outlived kill -9, all gone %v after the restart began, %d read interrupted); %d processes left; the new daemon holds 0 sessions and is %s",
		n, nClosed, slowest.Round(time.Millisecond), len(open), orphans, recovered.Round(time.Millisecond), nInterrupted,
		leftAfterClose+len(left), baseline)
}
