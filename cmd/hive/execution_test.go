package main

import (
	"encoding/json"

	"fmt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/view"
)

type taskStatus struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	ExitCode      *int   `json:"exit_code"`
	Error         string `json:"error"`
	DurationMs    int64  `json:"duration_ms"`
	StdoutTail    string `json:"stdout_tail"`
	StderrTail    string `json:"stderr_tail"`
	StdoutPath    string `json:"stdout_path"`
	StderrPath    string `json:"stderr_path"`
	StdoutBytes   int64  `json:"stdout_bytes"`
	StderrBytes   int64  `json:"stderr_bytes"`
	StdoutDropped int64  `json:"stdout_dropped"`
	AlreadyEnded  bool   `json:"already_ended"`
	Note          string `json:"note"`
}

type looseEnds struct {
	Todos []struct {
		ID        int64  `json:"id"`
		Subsystem string `json:"subsystem"`
		Key       string `json:"key"`
		Summary   string `json:"summary"`
	} `json:"todos"`
}

// todoFor is the loose-end todo whose key is key.
func todoFor(s *hivetest.Session, key string) (id int64, summary string, ok bool) {
	var le looseEnds
	s.MustCall("get_loose_ends", nil, &le)
	for _, t := range le.Todos {
		if t.Key == key {
			return t.ID, t.Summary, true
		}
	}
	return 0, "", false
}

func TestRunInlineResult(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	s := hivetest.Connect(t, state, cwd)
	var st taskStatus
	text := s.MustCall("run", map[string]any{"cmd": "pwd; echo out; echo err >&2; exit 3"}, &st)
	if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("status %+v", st)
	}
	if st.StdoutTail != cwd+"\nout\n" || st.StderrTail != "err\n" {
		t.Errorf("tails %q %q; want the bridge's cwd %q", st.StdoutTail, st.StderrTail, cwd)
	}
	if want := filepath.Join(state, "bash-tasks", st.ID+".out"); st.StdoutPath != want {
		t.Errorf("stdout path %q, want %q", st.StdoutPath, want)
	}
	if !strings.Contains(text, "exit 3") {
		t.Errorf("text %q does not say the exit code", text)
	}
	if _, _, ok := todoFor(s, st.ID); ok {
		t.Errorf("inline result left a todo")
	}
	// The tool envelope logged the call before and after. The daemon
	// writes its log off the call's path, so the last line may trail the
	// answer by a moment.
	wants := []string{`msg="tool call"`, `tool=run`, `exit 3`, `msg="tool done"`, `duration_ms=`, `outcome=ok`}
	hivetest.Eventually(t, 5*time.Second, "the tool call in daemon.log", func() error {
		log, _ := os.ReadFile(filepath.Join(state, "daemon.log"))
		var missing []string
		for _, want := range wants {
			if !strings.Contains(string(log), want) {
				missing = append(missing, want)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("daemon.log lacks %q", missing)
		}
		return nil
	})
}

// inspectJob is `hive inspect ID`'s record of one job.
func inspectJob(t *testing.T, state, id string) view.Job {
	t.Helper()
	out, err := hivetest.Run(t, state, "inspect", id)
	if err != nil {
		t.Fatalf("hive inspect %s: %v: %s", id, err, out)
	}
	var jobs []view.Job
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 1 {
		t.Fatalf("hive inspect %s: %v: %s", id, err, out)
	}
	return jobs[0]
}

// TestRunDirect: run starts a command without shell syntax directly, as
// terminal_exec does (shell_kind direct in its record: no bash to start),
// one with shell syntax under bash, and one whose program is not found
// under bash too, so its caller still gets bash's "command not found" and
// exit 127.
func TestRunDirect(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("bash's syntax, its command not found and exit 127")
	}
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	for _, c := range []struct {
		cmd, kind, out string
		code           int
	}{
		{"echo one 'two  three'", "direct", "one two  three\n", 0},
		{"echo $((1+2))", "bash", "3\n", 0},
		{"hive-no-such-program-x1 arg", "bash", "", 127},
	} {
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": c.cmd, "wait_seconds": 10}, &st)
		if st.Status != "done" || st.ExitCode == nil || *st.ExitCode != c.code || st.StdoutTail != c.out {
			t.Errorf("run %q: %+v; want done, exit %d, stdout %q", c.cmd, st, c.code, c.out)
		}
		if c.code == 127 && !strings.Contains(st.StderrTail, "command not found") {
			t.Errorf("run %q: stderr %q; want bash's command not found", c.cmd, st.StderrTail)
		}
		if j := inspectJob(t, state, st.ID); j.ShellKind != c.kind {
			t.Errorf("run %q: shell_kind %q, want %q", c.cmd, j.ShellKind, c.kind)
		}
	}
}

func TestRunBackgroundStatusAndTodo(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	ctx := t.Context()
	if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Subscribe(ctx, &mcp.SubscribeParams{URI: "hive://loose-ends"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	var st taskStatus
	text := s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; echo finished", gate), "wait_seconds": 0}, &st)
	if text != "task started: id="+st.ID || st.Status != "running" && st.Status != "pending" {
		t.Fatalf("started answer %q %+v", text, st)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(st.ID) {
		t.Errorf("id %q is not short lower-case hex", st.ID)
	}
	// A todo says it is running, and the change was pushed.
	_, summary, ok := todoFor(s, st.ID)
	if !ok || !strings.Contains(summary, "running") {
		t.Fatalf("running todo: %v %q", ok, summary)
	}
	s.WaitFor("resources/updated and log for the running todo", func(up, logs []string) bool {
		return len(up) > 0 && up[0] == "hive://loose-ends" && len(logs) > 0 && strings.Contains(logs[0], "running")
	})
	os.WriteFile(gate, nil, 0o600)
	// The completion replaces the todo's summary.
	s.WaitFor("completion pushed", func(up, logs []string) bool {
		return len(logs) > 1 && strings.Contains(logs[len(logs)-1], "done, exit 0")
	})
	_, summary, _ = todoFor(s, st.ID)
	if !strings.Contains(summary, "done, exit 0") || !strings.Contains(summary, st.ID+".out") {
		t.Errorf("completion todo %q lacks exit code or output path", summary)
	}
	// status sees the end and clears the todo.
	var st2 taskStatus
	s.MustCall("status", map[string]any{"id": st.ID}, &st2)
	if st2.Status != "done" || *st2.ExitCode != 0 || st2.StdoutTail != "finished\n" {
		t.Fatalf("status %+v", st2)
	}
	if _, _, ok := todoFor(s, st.ID); ok {
		t.Errorf("status observed the end but the todo remains")
	}
}

func TestStatusWaitAndRunWindow(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var st taskStatus
	s.MustCall("run", map[string]any{"cmd": "sleep 0.5; echo late", "wait_seconds": 0.05}, &st)
	if st.Status != "running" {
		t.Fatalf("run with a short window: %+v", st)
	}
	var st2 taskStatus
	s.MustCall("status", map[string]any{"id": st.ID, "wait_seconds": 10}, &st2)
	if st2.Status != "done" || st2.StdoutTail != "late\n" {
		t.Fatalf("status wait: %+v", st2)
	}
	if _, _, ok := todoFor(s, st.ID); ok {
		t.Errorf("todo left after status observed the end")
	}
	var st3 taskStatus
	s.MustCall("run", map[string]any{"cmd": "true", "wait_seconds": 99}, &st3)
	if st3.Status != "done" || !strings.Contains(st3.Note, "clamped to 30") {
		t.Errorf("wait over the cap: %+v", st3)
	}
}

func TestBadInput(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"run", map[string]any{"cmd": ""}, "cmd"},
		{"run", map[string]any{"cmd": "  "}, "cmd"},
		{"run", map[string]any{"cmd": "true", "name": "Bad Name"}, "name"},
		{"run", map[string]any{"cmd": "true", "timeout_secs": -1}, "timeout_secs"},
		{"run", map[string]any{"cmd": "true", "wait_seconds": -1}, "wait_seconds"},
		{"status", map[string]any{"id": "nope"}, "id"},
		{"status", map[string]any{"id": ""}, "id"},
		{"kill", map[string]any{"id": "nope"}, "id"},
		{"cancel_loose_end", map[string]any{"kind": "todo", "id": 999}, "id"},
		{"cancel_loose_end", map[string]any{"kind": "reminder-x", "id": 1}, "kind"},
		{"set_status", map[string]any{"text": strings.Repeat("x", 201)}, "text"},
		// A NUL would be cut by the kernel (or dropped by the parser): refused.
		{"run", map[string]any{"cmd": "ls /etc/pass\x00wd"}, "cmd: contains a NUL byte"},
		{"terminal_exec", map[string]any{"cmd": "ls /etc/pass\x00wd"}, "cmd: contains a NUL byte"},
		{"terminal_exec", map[string]any{"cmd": "true", "cwd": "/tmp\x00x"}, "cwd: contains a NUL byte"},
		{"terminal_exec", map[string]any{"cmd": "true", "env": map[string]any{"A": "b\x00c"}}, "env[\"A\"]: contains a NUL byte"},
		{"terminal_job_start", map[string]any{"cmd": "ls /etc/pass\x00wd"}, "cmd: contains a NUL byte"},
		{"terminal_pty_open", map[string]any{"cmd": "cat /etc/pass\x00wd"}, "cmd: contains a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.tool, tt.args), func(t *testing.T) {
			text, isErr := s.Call(tt.tool, tt.args, nil)
			if !isErr || !strings.Contains(text, tt.want) {
				t.Errorf("got isError=%v %q, want an error naming %q", isErr, text, tt.want)
			}
		})
	}
}

func TestNamesAndKill(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var st taskStatus
	s.MustCall("run", map[string]any{"cmd": "sleep 60", "name": "web", "wait_seconds": 0}, &st)
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(st.ID) {
		t.Fatalf("named task id %q: want an id of its own", st.ID)
	}
	if text, isErr := s.Call("run", map[string]any{"cmd": "true", "name": "web"}, nil); !isErr || !strings.Contains(text, "name") {
		t.Fatalf("busy name accepted: %q", text)
	}
	text := s.MustCall("kill", map[string]any{"id": "web"}, &st)
	if !strings.Contains(text, "SIGINT") {
		t.Errorf("kill text %q", text)
	}
	var end taskStatus
	s.MustCall("status", map[string]any{"id": "web", "wait_seconds": 10}, &end)
	if end.Status != "killed" || *end.ExitCode != 130 {
		t.Fatalf("after kill: %+v", end)
	}
	var again taskStatus
	text = s.MustCall("kill", map[string]any{"id": "web"}, &again)
	if !again.AlreadyEnded || !strings.Contains(text, "already ended") {
		t.Errorf("kill of an ended task: %q %+v", text, again)
	}
	// The name is free again.
	s.MustCall("run", map[string]any{"cmd": "echo reuse", "name": "web"}, &st)
	if st.Status != "done" || st.StdoutTail != "reuse\n" {
		t.Errorf("reuse: %+v", st)
	}
}

func TestPendingCancelledByKill(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--max-running", "1")
	s := hivetest.Connect(t, state, t.TempDir())
	var a, b taskStatus
	s.MustCall("run", map[string]any{"cmd": "sleep 30", "wait_seconds": 0}, &a)
	text := s.MustCall("run", map[string]any{"cmd": "touch should-not-exist", "wait_seconds": 0}, &b)
	if b.Status != "pending" || !strings.Contains(text, "pending") {
		t.Fatalf("second task with max-running 1: %q %+v", text, b)
	}
	s.MustCall("kill", map[string]any{"id": b.ID}, nil)
	var end taskStatus
	s.MustCall("status", map[string]any{"id": b.ID}, &end)
	if end.Status != "killed" || end.ExitCode != nil {
		t.Errorf("cancelled pending task: %+v", end)
	}
	s.MustCall("kill", map[string]any{"id": a.ID, "force": true}, nil)
}

func TestLooseEndTools(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var ids []int64
	for i := 0; i < 3; i++ {
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": "true", "wait_seconds": 0}, &st)
		id, _, ok := todoFor(s, st.ID)
		if !ok {
			t.Fatalf("no todo for %s", st.ID)
		}
		ids = append(ids, id)
	}
	s.MustCall("cancel_loose_end", map[string]any{"kind": "todo", "id": ids[0]}, nil)
	var cl struct {
		Cleared int `json:"cleared"`
	}
	s.MustCall("mark_todos_done", map[string]any{"ids": []int64{ids[1], ids[2], 424242}}, &cl)
	if cl.Cleared != 2 {
		t.Errorf("mark_todos_done cleared %d, want 2 (unknown id skipped)", cl.Cleared)
	}
	var le looseEnds
	s.MustCall("get_loose_ends", nil, &le)
	for _, td := range le.Todos {
		for _, id := range ids {
			if td.ID == id {
				// A late completion may re-raise the todo under a new id,
				// never the old one.
				t.Errorf("todo %d still listed", id)
			}
		}
	}
	// Other local programs raise todos through the socket.
	resp, err := hivetest.Run(t, state, "version")
	if err != nil || !strings.Contains(resp, "daemon") {
		t.Fatalf("version: %v %q", err, resp)
	}
}

func TestSetStatus(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	s.MustCall("set_status", map[string]any{"text": "building the world"}, nil)
	b, err := os.ReadFile(filepath.Join(state, "hyperhive-status"))
	if err != nil || string(b) != "building the world" {
		t.Fatalf("status file %q %v", b, err)
	}
}

// Two bridges share one daemon; a bridge exiting never stops a job.
func TestBridgesShareDaemonAndJobsOutliveThem(t *testing.T) {
	state := hivetest.StateDir(t)
	s1 := hivetest.Connect(t, state, t.TempDir())
	var st taskStatus
	s1.MustCall("run", map[string]any{"cmd": "sleep 0.7; echo survived", "wait_seconds": 0}, &st)
	s2 := hivetest.Connect(t, state, t.TempDir())
	var seen taskStatus
	s2.MustCall("status", map[string]any{"id": st.ID}, &seen)
	if seen.Status != "running" {
		t.Fatalf("second bridge sees %+v", seen)
	}
	pid := hivetest.DaemonPid(state)
	s1.Close()
	s2.Close()
	s3 := hivetest.Connect(t, state, t.TempDir())
	var end taskStatus
	s3.MustCall("status", map[string]any{"id": st.ID, "wait_seconds": 10}, &end)
	if end.Status != "done" || end.StdoutTail != "survived\n" {
		t.Fatalf("after the bridges left: %+v", end)
	}
	if hivetest.DaemonPid(state) != pid {
		t.Errorf("daemon changed: %d → %d", pid, hivetest.DaemonPid(state))
	}
}

// kill -9 of a daemon that runs its jobs itself (--hold-jobs=false): the
// next bridge restarts it; running jobs are interrupted with their
// processes gone; finished records are intact. (With the holder they
// keep running: TestJobsOutliveTheDaemon.)
func TestDaemonCrashRecovery(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--hold-jobs=false")
	s := hivetest.Connect(t, state, t.TempDir())
	var done taskStatus
	s.MustCall("run", map[string]any{"cmd": "echo kept"}, &done)
	dir := t.TempDir()
	var running []string
	var pids []int
	for i := 0; i < 2; i++ {
		pidFile := filepath.Join(dir, strconv.Itoa(i))
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("sleep 3600 & echo $! > %s; wait", pidFile), "wait_seconds": 0}, &st)
		running = append(running, st.ID)
		pids = append(pids, waitPidFile(t, pidFile))
	}
	old := hivetest.DaemonPid(state)
	hivetest.Kill(old)
	hivetest.Eventually(t, 10*time.Second, "the killed daemon to end", hivetest.Gone(old))
	// The bridge notices and exits, which ends the client's session.
	ended := make(chan error, 1)
	go func() { ended <- s.Wait() }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the bridge outlived its daemon")
	}
	s2 := hivetest.Connect(t, state, t.TempDir())
	if p := hivetest.DaemonPid(state); p == old || p == 0 {
		t.Fatalf("daemon not restarted: pid %d (old %d)", p, old)
	}
	var le looseEnds
	s2.MustCall("get_loose_ends", nil, &le)
	n := 0
	for _, td := range le.Todos {
		if strings.Contains(td.Summary, "interrupted") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d interrupted todos, want 2: %+v", n, le.Todos)
	}
	for i, id := range running {
		var st taskStatus
		s2.MustCall("status", map[string]any{"id": id}, &st)
		if st.Status != "interrupted" {
			t.Errorf("job %s after crash: %+v", id, st)
		}
		if hivetest.Alive(pids[i]) {
			t.Errorf("process %d of job %s survived the restart", pids[i], id)
		}
	}
	var kept taskStatus
	s2.MustCall("status", map[string]any{"id": done.ID}, &kept)
	if kept.Status != "done" || kept.StdoutTail != "kept\n" {
		t.Errorf("finished record changed: %+v", kept)
	}
}

func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	hivetest.Eventually(t, 10*time.Second, "a pid in "+path, func() error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	return pid
}

func TestCLI(t *testing.T) {
	state := hivetest.StateDir(t)
	id, err := hivetest.Run(t, state, "run", "--name", "cli-job", "--", "bash", "-c", "for i in 1 2 3; do echo line$i; sleep 0.1; done")
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{8}\n$`).MatchString(id) {
		t.Fatalf("run: %q %v", id, err)
	}
	out, err := hivetest.Run(t, state, "logs", "cli-job", "-f")
	if err != nil || out != "line1\nline2\nline3\n" {
		t.Fatalf("logs -f: %q %v", out, err)
	}
	out, err = hivetest.Run(t, state, "ps", "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var jobs []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		ExitCode *int   `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 1 || jobs[0].State != "done" {
		t.Fatalf("ps --json: %q %v", out, err)
	}
	out, _ = hivetest.Run(t, state, "ps", "--all")
	if !strings.Contains(out, "cli-job") || !strings.Contains(out, "STATE") {
		t.Errorf("ps table: %q", out)
	}
	hivetest.Run(t, state, "run", "--name", "long", "--", "sleep 60")
	out, err = hivetest.Run(t, state, "kill", "long")
	if err != nil || !strings.Contains(out, "SIGINT") {
		t.Errorf("kill: %q %v", out, err)
	}
	out, err = hivetest.Run(t, state, "kill", "cli-job")
	if err != nil || !strings.Contains(out, "already ended") {
		t.Errorf("kill ended: %q %v", out, err)
	}
	if _, err := hivetest.Run(t, state, "kill", "no-such-job"); err == nil {
		t.Errorf("kill of an unknown job succeeded")
	}
	fi, err := os.Stat(filepath.Join(state, "hive.sock"))
	if err != nil {
		t.Errorf("stat the socket: %v", err)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 { // Windows has no such modes
		t.Errorf("socket mode %v, want 0600", fi.Mode())
	}
	out, err = hivetest.Run(t, state, "daemon")
	if err == nil || !strings.Contains(out, "already running") {
		t.Errorf("second daemon: %q %v", out, err)
	}
}

// SIGTERM stops the daemon cleanly: running jobs are stopped (their
// processes gone) and recorded as interrupted; the socket is removed.
func TestDaemonSIGTERM(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	pidFile := filepath.Join(t.TempDir(), "pid")
	var st taskStatus
	s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("sleep 3600 & echo $! > %s; wait", pidFile), "wait_seconds": 0}, &st)
	child := waitPidFile(t, pidFile)
	pid := hivetest.DaemonPid(state)
	hivetest.Signal(pid, syscall.SIGTERM)
	hivetest.Eventually(t, 20*time.Second, "the daemon to exit on SIGTERM", hivetest.Gone(pid))
	if hivetest.Alive(child) {
		t.Errorf("job process %d survived the daemon's shutdown", child)
	}
	if _, err := os.Stat(filepath.Join(state, "hive.sock")); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	s2 := hivetest.Connect(t, state, t.TempDir())
	var end taskStatus
	s2.MustCall("status", map[string]any{"id": st.ID}, &end)
	if end.Status != "interrupted" {
		t.Errorf("job after shutdown: %+v", end)
	}
}

// A daemon that cannot start gives the bridge a clear error naming its log.
func TestBridgeReportsDaemonFailure(t *testing.T) {
	// A unix socket path longer than the kernel allows: the daemon fails.
	state := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	cmd := hivetest.Command(t, state, "mcp")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), filepath.Join(state, "daemon.log")) {
		t.Errorf("bridge without a daemon: %v %q", err, out)
	}
}

// A daemon whose output is the state dir's daemon.log (as when a bridge
// starts it) moves the log to daemon.log.1 past --log-max, and keeps
// logging to a fresh daemon.log.
func TestDaemonLogRotates(t *testing.T) {
	state := hivetest.StateDir(t)
	logPath := filepath.Join(state, "daemon.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d := hivetest.Command(t, state, "daemon", "--log-max", "4096")
	d.Stdout, d.Stderr = logf, logf
	hivetest.StartDaemonCmd(t, state, d)
	logf.Close()
	s := hivetest.Connect(t, state, t.TempDir())
	for i := range 40 {
		s.MustCall("terminal_exec", map[string]any{"cmd": fmt.Sprintf("echo %d", i)}, nil)
	}
	hivetest.Eventually(t, 5*time.Second, "the log's rotation", func() error {
		cur, _ := os.ReadFile(logPath)
		prev, _ := os.ReadFile(logPath + ".1")
		if len(prev) == 0 || !strings.Contains(string(cur), `msg="tool done"`) {
			return fmt.Errorf("no rotation: daemon.log %d bytes, daemon.log.1 %d bytes", len(cur), len(prev))
		}
		if len(cur) > 4096+2048 || len(prev) > 4096+2048 {
			return hivetest.Abort(fmt.Errorf("daemon.log %d bytes, daemon.log.1 %d bytes: over the cap", len(cur), len(prev)))
		}
		return nil
	})
}
