package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// psAll lists every job by name (the newest of a name), or by id when
// it has none.
func psAll(t *testing.T, state string) map[string]psJob {
	t.Helper()
	out, err := hive(t, state, "ps", "-a", "--json")
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
	pid := daemonPid(state)
	if pid == 0 || !processAlive(pid) {
		t.Fatal("no daemon to kill")
	}
	syscall.Kill(pid, syscall.SIGKILL)
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
	state := stateDir(t)
	startDaemon(t, state, "--max-running", "200")
	dir := t.TempDir()
	stop, gap := filepath.Join(dir, "stop"), filepath.Join(dir, "gap")
	// Each printer prints 1, 2, 3, … until told to stop, then exits 7.
	printer := fmt.Sprintf(`i=0; while [ ! -e %s ]; do i=$((i+1)); echo $i; if [ $((i %% 50)) = 0 ]; then sleep 0.02; fi; done; exit 7`, stop)
	const printers, gappers = 100, 5
	for i := range printers {
		if out, err := hive(t, state, "run", "--name", fmt.Sprintf("p%d", i), "--", printer); err != nil {
			t.Fatalf("run: %v %s", err, out)
		}
	}
	for i := range gappers {
		cmd := fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.02; done; echo bye; exit %d`, gap, 10+i)
		if i == gappers-1 {
			cmd = fmt.Sprintf(`while [ ! -e %s ]; do sleep 0.02; done; kill -TERM $$`, gap)
		}
		if out, err := hive(t, state, "run", "--notify", "--name", fmt.Sprintf("g%d", i), "--", cmd); err != nil {
			t.Fatalf("run: %v %s", err, out)
		}
	}
	// A client reads the start of p0's output.
	s := connect(t, state, t.TempDir())
	before := psAll(t, state)
	p0 := before["p0"].ID
	var seen struct {
		Stdout struct {
			Data       string `json:"data"`
			NextOffset int64  `json:"next_offset"`
		} `json:"stdout"`
	}
	for seen.Stdout.NextOffset == 0 {
		s.mustCall("terminal_job_logs", map[string]any{"job_id": p0, "wait_for_output": true, "wait_timeout_sec": 10}, &seen)
	}
	// Every printer has printed.
	for name, j := range before {
		for deadline := time.Now().Add(20 * time.Second); strings.HasPrefix(name, "p"); {
			if fi, err := os.Stat(filepath.Join(state, "bash-tasks", j.ID+".out")); err == nil && fi.Size() > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s printed nothing", name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	before = psAll(t, state)
	killDaemon9(t, state)
	s.cs.Wait() // the bridge goes with its daemon

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
	startDaemon(t, state, "--max-running", "200")
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
	out, err := hive(t, state, "todo", "ls", "--json")
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
	s2 := connect(t, state, t.TempDir())
	for i := range printers {
		name := fmt.Sprintf("p%d", i)
		out, err := hive(t, state, "wait", name)
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
		s2.mustCall("terminal_job_logs", map[string]any{"job_id": p0, "since_offset": off}, &page)
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
	state := stateDir(t)
	s := connect(t, state, t.TempDir())
	dir := t.TempDir()
	var ids []string
	var pids []int
	for i := range 3 {
		pidFile := filepath.Join(dir, strconv.Itoa(i))
		var st taskStatus
		s.mustCall("run", map[string]any{"cmd": fmt.Sprintf("sleep 3600 & echo $! > %s; wait", pidFile), "wait_seconds": 0}, &st)
		ids = append(ids, st.ID)
		pids = append(pids, waitPidFile(t, pidFile))
	}
	// A process of the same user that is no job's: left alone.
	other := newSleeper(t)
	h := holderPid(state)
	if h == 0 {
		t.Fatal("no holder runs")
	}
	syscall.Kill(h, syscall.SIGKILL)
	waitGone(t, h, "the killed holder")
	for deadline := time.Now().Add(20 * time.Second); ; { // ps reads without clearing loose ends
		n := 0
		for _, j := range psAll(t, state) {
			if j.State == "interrupted" {
				n++
			}
		}
		if n == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			logb, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
			t.Fatalf("%d of %d jobs interrupted after their holder's kill -9; daemon.log ends:\n%s", n, len(ids), tail(string(logb), 3000))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range ids {
		waitGone(t, pids[i], "a process of a job whose holder died")
	}
	if !processAlive(other) {
		t.Error("a process that is no job's was signalled")
	}
	var le looseEnds
	s.mustCall("get_loose_ends", nil, &le)
	n := 0
	for _, td := range le.Todos {
		if strings.Contains(td.Summary, "interrupted") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d interrupted loose ends, want 3: %+v", n, le.Todos)
	}
	for _, id := range ids {
		var st taskStatus
		s.mustCall("status", map[string]any{"id": id}, &st)
		if st.Status != "interrupted" || !strings.Contains(st.Error, "holder") {
			t.Errorf("job %s after its holder's kill -9: %+v", id, st)
		}
	}
	// The next job gets a new holder.
	var st taskStatus
	s.mustCall("run", map[string]any{"cmd": "echo again", "wait_seconds": 10}, &st)
	if st.Status != "done" || st.StdoutTail != "again\n" {
		t.Errorf("a job after the holder's death: %+v", st)
	}
	if nh := holderPid(state); nh == 0 || nh == h {
		t.Errorf("holder after: %d (the killed one %d)", nh, h)
	}
}

// waitHeldEnds asks the holder of the jobs, in its own protocol, until
// it holds the end of each of ids.
func waitHeldEnds(t *testing.T, state string, ids []string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
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
		all := true
		for _, id := range ids {
			all = all && ended[id]
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder holds no end for some of %v: %s", ids, line)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newSleeper starts a process of the test's own, ended at cleanup.
func newSleeper(t *testing.T) int {
	t.Helper()
	c := hiveCmd("", "version") // any process: replaced below
	c.Path, c.Args = "/bin/sleep", []string{"sleep", "3600"}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c.Process.Pid
}

// A holder of an incompatible protocol is reported, with both ranges,
// and left alone: the daemon does not start over it.
func TestDaemonReportsIncompatibleHolder(t *testing.T) {
	state := stateDir(t)
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
	out, err := hiveCmd(state, "daemon").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "incompatible protocol") || !strings.Contains(string(out), "7..9") {
		t.Errorf("a daemon over a holder of protocols 7..9: %v %s", err, out)
	}
}

// hive version --json names the holder of the jobs and how escapes are
// tracked (by the holder).
func TestVersionNamesTheHolder(t *testing.T) {
	state := stateDir(t)
	startDaemon(t, state)
	out, err := hive(t, state, "version", "--json")
	var v struct {
		Holder *struct {
			Pid   int    `json:"pid"`
			Proto int    `json:"proto"`
			Build string `json:"build"`
		} `json:"holder"`
		Tracking string `json:"escape_tracking"`
	}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Holder == nil || v.Holder.Pid != holderPid(state) || v.Holder.Proto != 1 || v.Holder.Build == "" || v.Tracking != "subreaper+marks" {
		t.Errorf("version --json: %v %s", err, out)
	}
}
