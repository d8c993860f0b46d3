package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/proc"
)

// psJob is a job as `hive ps --json` lists it.
type psJob struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	State       string    `json:"state"`
	ExitCode    *int      `json:"exit_code"`
	Signal      *int      `json:"signal"`
	Pid         int       `json:"pid"`
	Started     time.Time `json:"started"`
	Ended       time.Time `json:"ended"`
	StdoutBytes int64     `json:"stdout_bytes"`
	Error       string    `json:"error"`
}

// ptrString is *p as text, "-" for nil.
func ptrString(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

// psAll lists every job by name (the newest of a name), or by id when
// it has none.
func psAll(t *testing.T, state string) map[string]psJob {
	t.Helper()
	out, err := hivetest.Run(t, state, "ps", "-a", "--json")
	if err != nil {
		logb, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
		t.Fatalf("ps: %v %s; daemon.log ends:\n%s", err, out, tail(string(logb), 4000))
	}
	var js []psJob
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("ps --json: %v %s", err, out)
	}
	m := map[string]psJob{}
	for _, j := range js {
		if j.Name == "" {
			m[j.ID] = j
		} else if _, ok := m[j.Name]; !ok { // newest first: a name's newest job
			m[j.Name] = j
		}
	}
	return m
}

// killDaemon9 kills the daemon with SIGKILL and waits until it is gone.
func killDaemon9(t *testing.T, state string) {
	t.Helper()
	pid := hivetest.DaemonPid(state)
	if pid == 0 || !hivetest.Alive(pid) {
		t.Fatal("no daemon to kill")
	}
	hivetest.Kill(pid)
	waitGone(t, pid, "the killed daemon")
}

// checkSequence checks that b is the lines 1..n, each once, in order.
func checkSequence(b []byte) (int, error) {
	lines := strings.Split(string(b), "\n")
	if len(lines) == 0 || lines[len(lines)-1] != "" {
		return 0, fmt.Errorf("does not end with a whole line: %q", tail(string(b), 40))
	}
	lines = lines[:len(lines)-1]
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			return i, fmt.Errorf("line %d is %q, want %d", i+1, l, i+1)
		}
	}
	return len(lines), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// kill -9 of the daemon with 100 jobs printing: the holder keeps them,
// the next daemon adopts them (same id, pid, start), no byte is missing
// or duplicated across the gap, terminal_job_logs continues at the
// offset a client saw, and jobs that ended during the gap are recorded
// with their real exit codes and one loose end each.
func TestJobsOutliveTheDaemon(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--max-running", "200")
	dir := t.TempDir()
	stop, gap := filepath.Join(dir, "stop"), filepath.Join(dir, "gap")
	// Each printer prints 1, 2, 3, … until told to stop, then exits 7.
	printer := fmt.Sprintf(`i=0; while [ ! -e %s ]; do i=$((i+1)); echo $i; if [ $((i %% 50)) = 0 ]; then sleep 0.02; fi; done; exit 7`, stop)
	const printers, gappers = 100, 5
	for i := range printers {
		if out, err := hivetest.Run(t, state, "run", "--name", fmt.Sprintf("p%d", i), "--", printer); err != nil {
			t.Fatalf("run: %v %s", err, out)
		}
	}
	for i := range gappers {
		cmd := fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.02; done; echo bye; exit %d`, gap, 10+i)
		if i == gappers-1 {
			cmd = fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.02; done; kill -TERM $$`, gap)
		}
		if out, err := hivetest.Run(t, state, "run", "--notify", "--name", fmt.Sprintf("g%d", i), "--", cmd); err != nil {
			t.Fatalf("run: %v %s", err, out)
		}
	}
	// A client reads the start of p0's output.
	s := hivetest.Connect(t, state, t.TempDir())
	before := psAll(t, state)
	p0 := before["p0"].ID
	var seen struct {
		Stdout struct {
			Data       string `json:"data"`
			NextOffset int64  `json:"next_offset"`
		} `json:"stdout"`
	}
	for seen.Stdout.NextOffset == 0 {
		s.MustCall("terminal_job_logs", map[string]any{"job_id": p0, "wait_for_output": true, "wait_timeout_sec": 10}, &seen)
	}
	// Every printer has printed.
	for name, j := range before {
		if !strings.HasPrefix(name, "p") {
			continue
		}
		hivetest.Eventually(t, 20*time.Second, "job "+name+" to print", func() error {
			if fi, err := os.Stat(filepath.Join(state, "bash-tasks", j.ID+".out")); err != nil || fi.Size() == 0 {
				return fmt.Errorf("job %s printed nothing", name)
			}
			return nil
		})
	}
	before = psAll(t, state)
	killDaemon9(t, state)
	s.Wait() // the bridge goes with its daemon

	// The gap: the gappers end while no daemon runs.
	if err := os.WriteFile(gap, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var gapIDs []string
	for i := range gappers {
		gapIDs = append(gapIDs, before[fmt.Sprintf("g%d", i)].ID)
	}
	waitHeldEnds(t, state, gapIDs)
	restart := time.Now()
	hivetest.StartDaemon(t, state, "--max-running", "200")
	after := psAll(t, state)
	for i := range printers {
		name := fmt.Sprintf("p%d", i)
		b, a := before[name], after[name]
		if a.State != "running" || a.ID != b.ID || a.Pid != b.Pid || !a.Started.Equal(b.Started) {
			t.Errorf("%s after the daemon's kill -9: %+v, before %+v", name, a, b)
		}
	}
	for i := range gappers {
		name := fmt.Sprintf("g%d", i)
		a := after[name]
		switch {
		case i < gappers-1 && (a.State != "done" || a.ExitCode == nil || *a.ExitCode != 10+i):
			t.Errorf("%s ended in the gap: %+v, want done with exit %d", name, a, 10+i)
		case i == gappers-1 && (a.Signal == nil || *a.Signal != int(syscall.SIGTERM)):
			t.Errorf("%s killed itself in the gap: %+v, want signal 15", name, a)
		case !a.Ended.Before(restart):
			t.Errorf("%s ended at %v, after the restart at %v", name, a.Ended, restart)
		}
	}
	// One loose end each for the gappers, saying how they ended.
	out, err := hivetest.Run(t, state, "todo", "ls", "--json")
	if err != nil {
		t.Fatalf("todo ls: %v %s", err, out)
	}
	for i := range gappers {
		id := after[fmt.Sprintf("g%d", i)].ID
		if n := strings.Count(out, `"key":"`+id+`"`); n != 1 {
			t.Errorf("job %s has %d loose ends, want 1: %s", id, n, out)
		}
	}

	// They finish; their ends are recorded.
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := hivetest.Connect(t, state, t.TempDir())
	for i := range printers {
		name := fmt.Sprintf("p%d", i)
		out, err := hivetest.Run(t, state, "wait", name)
		if rc(t, err) != 7 {
			t.Errorf("wait %s: exit %d %q, want 7", name, rc(t, err), out)
		}
	}
	after = psAll(t, state)
	for i := range printers {
		name := fmt.Sprintf("p%d", i)
		j := after[name]
		b, err := os.ReadFile(filepath.Join(state, "bash-tasks", j.ID+".out"))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := checkSequence(b); err != nil {
			t.Errorf("%s's output across the gap (%d lines good): %v", name, n, err)
		}
		if j.State != "done" || j.ExitCode == nil || *j.ExitCode != 7 || j.StdoutBytes != int64(len(b)) {
			t.Errorf("%s: %+v, want done, exit 7, %d bytes", name, j, len(b))
		}
	}
	// From the offset the first client saw, the logs go on exactly.
	whole, _ := os.ReadFile(filepath.Join(state, "bash-tasks", p0+".out"))
	if !strings.HasPrefix(string(whole), seen.Stdout.Data) || int64(len(seen.Stdout.Data)) != seen.Stdout.NextOffset {
		t.Fatalf("the first read (%d bytes to %d) is not the start of the output", len(seen.Stdout.Data), seen.Stdout.NextOffset)
	}
	var rest strings.Builder
	for off := seen.Stdout.NextOffset; off < int64(len(whole)); {
		var page struct {
			Stdout struct {
				Data       string `json:"data"`
				Offset     int64  `json:"offset"`
				NextOffset int64  `json:"next_offset"`
			} `json:"stdout"`
		}
		s2.MustCall("terminal_job_logs", map[string]any{"job_id": p0, "since_offset": off}, &page)
		if page.Stdout.Offset != off || page.Stdout.NextOffset <= off {
			t.Fatalf("logs from %d: %+v", off, page.Stdout)
		}
		rest.WriteString(page.Stdout.Data)
		off = page.Stdout.NextOffset
	}
	if seen.Stdout.Data+rest.String() != string(whole) {
		t.Errorf("what the client saw before the gap plus what it read after is not the output")
	}
}

// kill -9 of the holder of the jobs: its jobs end as interrupted (with
// their processes gone and a loose end each), as in a daemon's crash
// without a holder; nothing else is signalled, and new jobs get a new
// holder.
func TestHolderKilled(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	dir := t.TempDir()
	var ids []string
	var pids []int
	for i := range 3 {
		pidFile := filepath.Join(dir, strconv.Itoa(i))
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("sleep 3600 & echo $! > %s; wait", pidFile), "wait_seconds": 0}, &st)
		ids = append(ids, st.ID)
		pids = append(pids, waitPidFile(t, pidFile))
	}
	// With a cgroup per job, a process that left the job's group and
	// dropped its marks (env -i) ends with it: found by its cgroup.
	var scrubbed int
	if escapeTracking(t, state) == proc.TrackCgroup {
		pidFile := filepath.Join(dir, "scrubbed")
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("env -i setsid sh -c 'echo $$ > %s; exec sleep 3600' & wait", pidFile), "wait_seconds": 0}, &st)
		ids = append(ids, st.ID)
		scrubbed = waitPidFile(t, pidFile)
		if p, ok := proc.Pin(scrubbed, nil); ok { // killed here if the test fails
			t.Cleanup(func() { p.Signal(syscall.SIGKILL); p.Close() })
		}
	}
	var sh ptyInfo
	s.MustCall("terminal_pty_open", nil, &sh)
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "echo up-$((1+1))\n", "wait_for": "up-2"})
	// A process of the same user that is no job's: left alone. And one
	// marked as a process of a job that ended normally (its job let it
	// go): left alone as at a daemon's start.
	other := newSleeper(t)
	var ended taskStatus
	s.MustCall("run", map[string]any{"cmd": "true", "wait_seconds": 10}, &ended)
	marked := newSleeper(t, "HIVE_JOB_ID="+ended.ID, "HIVE_JOB_OWNER="+state)
	h := hivetest.HolderPid(state)
	if h == 0 {
		t.Fatal("no holder runs")
	}
	hivetest.Kill(h)
	waitGone(t, h, "the killed holder")
	if err := hivetest.Wait(20*time.Second, func() error { // ps reads without clearing loose ends
		n := 0
		var others []string
		for _, j := range psAll(t, state) {
			if j.State == "interrupted" {
				n++
			} else if slices.Contains(ids, j.ID) {
				others = append(others, fmt.Sprintf("%s %s exit %v signal %v error %q", j.ID, j.State, ptrString(j.ExitCode), ptrString(j.Signal), j.Error))
			}
		}
		if n != len(ids) {
			return fmt.Errorf("%d of %d jobs interrupted after their holder's kill -9; the others: %s", n, len(ids), strings.Join(others, "; "))
		}
		return nil
	}); err != nil {
		logb, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
		t.Fatalf("%v; daemon.log ends:\n%s", err, tail(string(logb), 3000))
	}
	for _, pid := range pids {
		waitGone(t, pid, "a process of a job whose holder died")
	}
	if scrubbed != 0 {
		waitGone(t, scrubbed, "a process without marks in the cgroup of a job whose holder died")
	}
	if !hivetest.Alive(other) || !hivetest.Alive(marked) {
		t.Errorf("a process that is no running job's was signalled: unmarked alive %v, marked by an ended job alive %v", hivetest.Alive(other), hivetest.Alive(marked))
	}
	// The PTY session ends too, its shell gone; its output stays readable.
	waitGone(t, sh.Pid, "the shell of a session whose holder died")
	hivetest.Eventually(t, 10*time.Second, "the session to tell it was interrupted", func() error {
		var out ptyOut
		text, _ := s.Call("terminal_pty_read", map[string]any{"session_id": sh.SessionID}, &out)
		if !strings.Contains(text, "interrupted") || !strings.Contains(out.Data, "up-2") {
			return fmt.Errorf("the session after its holder's kill -9: %q %+v", text, out)
		}
		return nil
	})
	var le looseEnds
	s.MustCall("get_loose_ends", nil, &le)
	n := 0
	for _, td := range le.Todos {
		if strings.Contains(td.Summary, "interrupted") {
			n++
		}
	}
	if n != len(ids) {
		t.Errorf("%d interrupted loose ends, want %d: %+v", n, len(ids), le.Todos)
	}
	for _, id := range ids {
		var st taskStatus
		s.MustCall("status", map[string]any{"id": id}, &st)
		if st.Status != "interrupted" || !strings.Contains(st.Error, "holder") {
			t.Errorf("job %s after its holder's kill -9: %+v", id, st)
		}
	}
	// The next job gets a new holder.
	var st taskStatus
	s.MustCall("run", map[string]any{"cmd": "echo again", "wait_seconds": 10}, &st)
	if st.Status != "done" || st.StdoutTail != "again\n" {
		t.Errorf("a job after the holder's death: %+v", st)
	}
	if nh := hivetest.HolderPid(state); nh == 0 || nh == h {
		t.Errorf("holder after: %d (the killed one %d)", nh, h)
	}
}

// waitHeldEnds asks the holder of the jobs, in its own protocol, until
// it holds the end of each of ids.
func waitHeldEnds(t *testing.T, state string, ids []string) {
	t.Helper()
	hivetest.Eventually(t, 20*time.Second, "the holder to hold the ends", func() error {
		c, err := net.Dial("unix", filepath.Join(state, "holder.sock"))
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		var hello, answer struct {
			Hello *struct{ Proto, Min int } `json:"hello"`
			Error string                    `json:"error"`
			Held  []struct {
				ID  string          `json:"id"`
				End json.RawMessage `json:"end"`
			} `json:"held"`
		}
		line, _ := r.ReadBytes('\n')
		if json.Unmarshal(line, &hello); hello.Hello == nil || hello.Error != "" {
			t.Fatalf("the holder's hello: %s", line)
		}
		fmt.Fprintf(c, `{"op":"hello","hello":{"proto":1,"min":1,"build":"test"}}`+"\n"+`{"seq":1,"op":"held"}`+"\n")
		line, _ = r.ReadBytes('\n')
		c.Close()
		if err := json.Unmarshal(line, &answer); err != nil || answer.Error != "" {
			t.Fatalf("held: %s", line)
		}
		ended := map[string]bool{}
		for _, h := range answer.Held {
			ended[h.ID] = len(h.End) > 0
		}
		for _, id := range ids {
			if !ended[id] {
				return fmt.Errorf("the holder holds no end for some of %v: %s", ids, line)
			}
		}
		return nil
	})
}

// newSleeper starts a process of the test's own, ended at cleanup.
func newSleeper(t *testing.T, env ...string) int {
	t.Helper()
	c := exec.Command("/bin/sleep", "3600")
	c.Env = append(os.Environ(), env...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c.Process.Pid
}

// A holder of an incompatible protocol is reported, with both ranges,
// and left alone: the daemon does not start over it.
func TestDaemonReportsIncompatibleHolder(t *testing.T) {
	state := hivetest.StateDir(t)
	ln, err := net.Listen("unix", filepath.Join(state, "holder.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(`{"hello":{"proto":9,"min":7,"build":"future","pid":4242}}` + "\n"))
			c.Close()
		}
	}()
	out, err := hivetest.Command(t, state, "daemon").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "incompatible protocol") || !strings.Contains(string(out), "7..9") {
		t.Errorf("a daemon over a holder of protocols 7..9: %v %s", err, out)
	}
}

// hive version --json names the holder of the jobs and how escapes are
// tracked (by the holder).
func TestVersionNamesTheHolder(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	out, err := hivetest.Run(t, state, "version", "--json")
	var v struct {
		Holder *struct {
			Pid     int    `json:"pid"`
			Proto   int    `json:"proto"`
			Build   string `json:"build"`
			Cgroups string `json:"cgroups"`
		} `json:"holder"`
		Tracking string `json:"escape_tracking"`
	}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Holder == nil || v.Holder.Pid != hivetest.HolderPid(state) || v.Holder.Proto != wire.Proto || v.Holder.Build == "" || (v.Tracking != proc.TrackSubreaper && v.Tracking != proc.TrackCgroup) {
		t.Fatalf("version --json: %v %s", err, out)
	}
	// With cgroups it names where its jobs' are, and the holder runs in
	// the cgroup that holds them (not in one of them).
	if v.Tracking == proc.TrackCgroup {
		self, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", v.Holder.Pid))
		if st, err := os.Stat(v.Holder.Cgroups); err != nil || !st.IsDir() || !strings.Contains(v.Holder.Cgroups, "/hive-") || strings.Contains(string(self), "/hive-") {
			t.Errorf("holder cgroups %q (%v); the holder's own: %q", v.Holder.Cgroups, err, self)
		}
	} else if v.Holder.Cgroups != "" {
		t.Errorf("escape_tracking %s, and holder cgroups %q", v.Tracking, v.Holder.Cgroups)
	}
}

// A PTY session running vim outlives a kill -9 of the daemon: the next
// daemon adopts it (same id and pid), its screen is intact (replayed
// from the output the holder kept), reads go on at the next offset, and
// it takes input: vim writes the file and exits.
func TestPTYOutlivesTheDaemon(t *testing.T) {
	if _, err := exec.LookPath("vim"); err != nil {
		t.Skip("no vim here (.ci/run installs it)")
	}
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	file := filepath.Join(t.TempDir(), "note.txt")
	var info ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"cmd": "vim -u NONE -i NONE -N " + file, "cols": 80, "rows": 24}, &info)
	// Until vim has drawn its screen the terminal still echoes what it is
	// sent: wait for it, then type, and wait for the screen to show it.
	screenShows := func(s *hivetest.Session, want func(string) bool) ptyOut {
		t.Helper()
		var out ptyOut
		hivetest.Eventually(t, 10*time.Second, "vim's screen", func() error {
			if out = ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": info.SessionID, "screen": true}); !want(out.Screen) {
				return fmt.Errorf("vim's screen: %q", out.Screen)
			}
			return nil
		})
		return out
	}
	screenShows(s, func(sc string) bool { return strings.Count(sc, "~") > 10 })
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "ihello from vim\x1b", "wait_ms": 0})
	screenShows(s, func(sc string) bool {
		return strings.HasPrefix(sc, "hello from vim") && !strings.Contains(sc, "INSERT")
	})
	var sh ptyInfo
	s.MustCall("terminal_pty_open", nil, &sh)
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "echo before-$((1+1))\n", "wait_for": "before-2"})
	before := ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": info.SessionID, "screen": true})
	if !strings.Contains(before.Screen, "hello from vim") {
		t.Fatalf("vim's screen before: %q", before.Screen)
	}
	killDaemon9(t, state)
	s.Wait()

	s2 := hivetest.Connect(t, state, t.TempDir())
	after := ptyCall(t, s2, "terminal_pty_read", map[string]any{"session_id": info.SessionID, "screen": true})
	if after.Screen != before.Screen || !after.Running {
		t.Errorf("vim's screen after the daemon's kill -9:\n%s\nwant:\n%s", after.Screen, before.Screen)
	}
	var list struct {
		Sessions []ptyInfo `json:"sessions"`
	}
	s2.MustCall("terminal_pty_list", nil, &list)
	found := 0
	for _, x := range list.Sessions {
		if (x.SessionID == info.SessionID && x.Pid == info.Pid) || (x.SessionID == sh.SessionID && x.Pid == sh.Pid) {
			found++
		}
	}
	if len(list.Sessions) != 2 || found != 2 {
		t.Errorf("sessions after: %+v, want %+v and %+v", list.Sessions, info, sh)
	}
	// An adopted shell answers as before: readiness (the shell blocked
	// reading its terminal) is seen at once, and its output comes.
	t0 := time.Now()
	var typed struct {
		ptyOut
		Note string `json:"note"`
	}
	text := s2.MustCall("terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "x"}, &typed)
	if strings.Contains(text, "still busy") || time.Since(t0) > 5*time.Second {
		logb, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
		t.Errorf("a keystroke to the adopted shell: %q after %v; daemon.log ends:\n%s", text, time.Since(t0), tail(string(logb), 1500))
	}
	if out := ptyCall(t, s2, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "\x15echo after-$((2+2))\n", "wait_for": "after-4"}); !out.Matched {
		t.Errorf("the adopted shell: %+v", out)
	}
	// Reads go on where they were.
	more := ptyCall(t, s2, "terminal_pty_read", map[string]any{"session_id": info.SessionID, "since_offset": before.NextOffset})
	if more.Offset != before.NextOffset {
		t.Errorf("read from %d after the restart: %+v", before.NextOffset, more)
	}
	// It takes input: vim saves and exits.
	ptyCall(t, s2, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": ":wq\r", "wait_ms": 0})
	hivetest.Eventually(t, 10*time.Second, "vim to exit on :wq", func() error {
		var out ptyOut
		if s2.MustCall("terminal_pty_read", map[string]any{"session_id": info.SessionID}, &out); out.Running {
			return errors.New("vim still runs")
		}
		return nil
	})
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello from vim\n" {
		t.Errorf("the file vim wrote: %q %v", b, err)
	}
	s2.MustCall("terminal_pty_close", map[string]any{"session_id": info.SessionID}, nil)
	if hivetest.Alive(info.Pid) {
		t.Errorf("vim %d left running after close", info.Pid)
	}
}

// hive restart keeps PTY sessions as it keeps jobs: the next daemon
// adopts the shell, which answers, with its output before the restart.
func TestRestartKeepsPTYSessions(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	s := hivetest.Connect(t, state, t.TempDir())
	var sh ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"name": "kept"}, &sh)
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": "kept", "input": "echo one-$((0+1))\n", "wait_for": "one-1"})
	old := hivetest.DaemonPid(state)
	if out, err := hivetest.Run(t, state, "restart", "--grace", "1s"); err != nil {
		t.Fatalf("restart: %v %s", err, out)
	}
	waitGone(t, old, "the restarted daemon")
	s.Wait()
	s2 := hivetest.Connect(t, state, t.TempDir())
	out := ptyCall(t, s2, "terminal_pty_send", map[string]any{"session_id": "kept", "input": "echo two-$((1+1))\n", "wait_for": "two-2"})
	if !out.Matched || !out.Running || !hivetest.Alive(sh.Pid) {
		t.Fatalf("the session after hive restart: %+v", out)
	}
	all := ptyCall(t, s2, "terminal_pty_read", map[string]any{"session_id": "kept", "since_offset": 0})
	if !strings.Contains(all.Data, "one-1") || !strings.Contains(all.Data, "two-2") {
		t.Errorf("the session's output across the restart: %q", all.Data)
	}
}

// hive restart while a PTY close waits out its grace: the old daemon
// lets it go at once (the holder keeps the session), and the restart
// completes.
func TestRestartDuringPTYClose(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	s := hivetest.Connect(t, state, t.TempDir())
	var sh ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"cmd": "trap 'echo hup' HUP; echo ready; while :; do sleep 0.1; done"}, &sh)
	waitPTYOutput(t, s, sh.SessionID, "ready")
	go s.CallTool(context.Background(), &mcp.CallToolParams{Name: "terminal_pty_close", Arguments: map[string]any{"session_id": sh.SessionID}}) // ends with the restart
	waitPTYOutput(t, s, sh.SessionID, "hup")                                                                                                    // the close has begun: its hangup came
	t0 := time.Now()
	done := make(chan error, 1)
	go func() { _, err := hivetest.Run(t, state, "restart", "--grace", "1s"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("restart: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hive restart hung while a PTY close was under way")
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Errorf("hive restart took %v", d)
	}
}

// A session resized before the daemon's kill -9 comes back at its size.
func TestPTYResizedThenAdopted(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var sh ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"cols": 80, "rows": 24}, &sh)
	s.MustCall("terminal_pty_resize", map[string]any{"session_id": sh.SessionID, "cols": 40, "rows": 10}, nil)
	// Up to the prompt after the output: the screen read next must be
	// the last one before the kill (the prompt raced the read).
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "printf 'x%.0s' $(seq 50); echo; echo done-$((1+1))\n", "wait_for": "done-2\nbash-[0-9.]+[#$] $"})
	before := ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": sh.SessionID, "screen": true})
	killDaemon9(t, state)
	s.Wait()
	s2 := hivetest.Connect(t, state, t.TempDir())
	var list struct {
		Sessions []ptyInfo `json:"sessions"`
	}
	s2.MustCall("terminal_pty_list", nil, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Cols != 40 || list.Sessions[0].Rows != 10 {
		t.Errorf("the resized session after the daemon's kill -9: %+v", list.Sessions)
	}
	after := ptyCall(t, s2, "terminal_pty_read", map[string]any{"session_id": sh.SessionID, "screen": true})
	if after.Screen != before.Screen {
		t.Errorf("the resized session's screen after the daemon's kill -9:\n%s\nwant:\n%s", after.Screen, before.Screen)
	}
}

// SIGTERM of a holder left by a killed daemon ends its sessions, even a
// program that ignores the hangup, and the holder exits soon.
func TestHolderSIGTERMEndsSessions(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var sh ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"cmd": "trap '' HUP; echo ready; exec sleep 1000"}, &sh)
	waitPTYOutput(t, s, sh.SessionID, "ready")
	h := hivetest.HolderPid(state)
	killDaemon9(t, state)
	s.Wait()
	t0 := time.Now()
	hivetest.Signal(h, syscall.SIGTERM)
	waitGone(t, h, "the holder after SIGTERM")
	waitGone(t, sh.Pid, "a session's program that ignores SIGHUP, after its holder's SIGTERM")
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the holder's SIGTERM took %v", d)
	}
}

// waitPTYOutput waits until session id's output holds want.
func waitPTYOutput(t *testing.T, s *hivetest.Session, id, want string) {
	t.Helper()
	hivetest.Eventually(t, 10*time.Second, fmt.Sprintf("%q in session %s's output", want, id), func() error {
		var out ptyOut
		if s.MustCall("terminal_pty_read", map[string]any{"session_id": id}, &out); !strings.Contains(out.Data, want) {
			return fmt.Errorf("session %s: no %q in its output: %q", id, want, out.Data)
		}
		return nil
	})
}

// An end told inline (run with wait_seconds) is its holder's to keep
// until it is recorded, which the answer does not wait for: a daemon
// killed the moment it has told it loses nothing, and the next one
// records the same end.
func TestInlineEndOutlivesTheDaemon(t *testing.T) {
	state := hivetest.StateDir(t)
	want := map[string]int{}
	for i := range 4 {
		hivetest.StartDaemon(t, state)
		s := hivetest.Connect(t, state, t.TempDir())
		pid := hivetest.DaemonPid(state)
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("exit %d", 3+i), "wait_seconds": 10}, &st)
		hivetest.Kill(pid) // at once: its end may not be recorded yet
		waitGone(t, pid, "the killed daemon")
		s.Wait()
		if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 3+i {
			t.Fatalf("round %d: told %+v, want done with exit %d", i, st, 3+i)
		}
		want[st.ID] = 3 + i
	}
	hivetest.StartDaemon(t, state)
	after := psAll(t, state)
	for id, code := range want {
		if a, ok := after[id]; !ok || a.State != "done" || a.ExitCode == nil || *a.ExitCode != code {
			t.Errorf("job %s after its daemon's kill -9: %+v (listed %v), want done with exit %d", id, a, ok, code)
		}
	}
}

// hive restart of a daemon under systemd whose unit is what hive service
// install writes (KillMode=process) stops the daemon keeping its jobs and
// has systemd start the unit again: the new daemon adopts them (same id,
// pid, start). With an older unit (another KillMode) systemd restarts
// the unit as before, and hive says the jobs went with it.
func TestRestartUnderSystemdKeepsJobs(t *testing.T) {
	state := hivetest.StateDir(t)
	bin := hivetest.Bin(t)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := filepath.Join(dir, "systemctl")
	// systemd's part: report the unit's KillMode, start the unit's daemon.
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %s
case "$2" in
show) echo process ;;
start) %s HIVE_STATE_DIR=%s HIVE_SUPERVISOR=systemd %s daemon >/dev/null 2>&1 & ;;
esac
exit 0
`, calls, strings.Join(bin.Env, " "), state, bin.Path)
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := hivetest.Command(t, state, "daemon")
	d.Env = append(d.Env, "HIVE_SUPERVISOR=systemd")
	hivetest.StartDaemonCmd(t, state, d)
	oldPID := hivetest.DaemonPid(state)
	if out, err := hivetest.Run(t, state, "run", "--name", "long", "--", "sleep", "60"); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	before := psAll(t, state)["long"]
	if before.State != "running" {
		t.Fatalf("before: %+v", before)
	}
	c := hivetest.Command(t, state, "restart")
	c.Env = append(c.Env, "HIVE_SYSTEMCTL="+fake)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "restarted the daemon") {
		t.Fatalf("restart under systemd: %v %s", err, out)
	}
	if pid := hivetest.DaemonPid(state); pid == oldPID || pid == 0 {
		t.Fatalf("daemon pid %d after the restart, was %d", pid, oldPID)
	}
	after := psAll(t, state)["long"]
	if after.State != "running" || after.ID != before.ID || after.Pid != before.Pid || !after.Started.Equal(before.Started) {
		t.Errorf("the job across hive restart under systemd: before %+v, after %+v", before, after)
	}
	got, _ := os.ReadFile(calls)
	if want := "--user show -p KillMode --value hive.service\n--user start hive.service\n"; string(got) != want {
		t.Errorf("systemctl calls:\n%s\nwant:\n%s", got, want)
	}

	// An older unit: systemctl restarts it (here: a fake that only
	// records), and hive says the jobs go with it.
	os.Remove(calls)
	old := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s\n[ \"$2\" = show ] && echo mixed\nexit 0\n", calls)
	if err := os.WriteFile(fake, []byte(old), 0o755); err != nil {
		t.Fatal(err)
	}
	c = hivetest.Command(t, state, "restart")
	c.Env = append(c.Env, "HIVE_SYSTEMCTL="+fake)
	out, err = c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stops the jobs with its daemon") {
		t.Errorf("restart under an older unit: %v %s", err, out)
	}
	got, _ = os.ReadFile(calls)
	if want := "--user show -p KillMode --value hive.service\n--user restart hive.service\n"; string(got) != want {
		t.Errorf("systemctl calls with an older unit:\n%s\nwant:\n%s", got, want)
	}
}
