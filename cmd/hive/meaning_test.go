package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

// connectEnv is connect with extra environment for the bridge (and so for
// the daemon it starts and the session's commands).
func connectEnv(t *testing.T, state, cwd string, env ...string) *hivetest.Session {
	t.Helper()
	cmd := hivetest.Command(t, state, "mcp")
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = cwd
	cmd.Stderr = os.Stderr
	return hivetest.ConnectCmd(t, cmd)
}

// One shell policy for run, terminal_exec, terminal_job_start, hive run
// and PTY shells: /bin/bash even when a bash comes first on PATH, no
// ZDOTDIR or ZSH_*, and SHELL is that bash, never the client's.
func TestOneShellPolicy(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash here")
	}
	state := hivetest.StateDir(t)
	bin := t.TempDir()
	marker := filepath.Join(bin, "used")
	// A bash and a zsh that tell on themselves, then do the job, so a
	// command run through them still answers: only the marker shows it.
	for _, name := range []string{"bash", "zsh"} {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> %s\nexec /bin/bash \"$@\"\n", name, marker)
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	clientEnv := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"SHELL=" + filepath.Join(bin, "zsh"), "ZDOTDIR=" + bin, "ZSH_THEME=agnoster"}
	s := connectEnv(t, state, t.TempDir(), clientEnv...)
	const probe = `echo "[$SHELL|${ZDOTDIR-unset}|${ZSH_THEME-unset}|$("$SHELL" -c 'echo sub')]"`
	want := "[/bin/bash|unset|unset|sub]"
	checkMarker := func(t *testing.T) {
		t.Helper()
		if b, err := os.ReadFile(marker); err == nil {
			t.Errorf("a shell from PATH or $SHELL ran: %q", b)
			os.Remove(marker)
		}
	}

	t.Run("run", func(t *testing.T) {
		var st taskStatus
		s.MustCall("run", map[string]any{"cmd": probe, "wait_seconds": 10}, &st)
		if strings.TrimSpace(st.StdoutTail) != want {
			t.Errorf("run printed %q, want %q (%+v)", st.StdoutTail, want, st)
		}
		checkMarker(t)
	})
	t.Run("terminal_exec", func(t *testing.T) {
		for _, sh := range []any{nil, true, "bash"} {
			args := map[string]any{"cmd": probe}
			if sh != nil {
				args["shell"] = sh
			}
			var e envelope
			s.MustCall("terminal_exec", args, &e)
			if strings.TrimSpace(e.Stdout) != want || e.ShellKind != "bash" || e.AutoShell != (sh == nil) {
				t.Errorf("shell=%v: %+v, want stdout %q", sh, e, want)
			}
		}
		checkMarker(t)
	})
	t.Run("terminal_job_start", func(t *testing.T) {
		var st struct {
			JobID     string `json:"job_id"`
			ShellKind string `json:"shell_kind"`
		}
		s.MustCall("terminal_job_start", map[string]any{"cmd": probe}, &st)
		var logs struct {
			Status string `json:"status"`
			Stdout struct {
				Data string `json:"data"`
			} `json:"stdout"`
		}
		s.MustCall("terminal_job_logs", map[string]any{"job_id": st.JobID, "wait_until_exit": true, "wait_timeout_sec": 20}, &logs)
		if strings.TrimSpace(logs.Stdout.Data) != want || st.ShellKind != "bash" {
			t.Errorf("job printed %q (%s, shell %s), want %q", logs.Stdout.Data, logs.Status, st.ShellKind, want)
		}
		checkMarker(t)
	})
	t.Run("pty", func(t *testing.T) {
		// The interactive default, and a command line (bash -c).
		for _, c := range []struct{ cmd, input string }{
			{"", probe + "; echo \"[$BASH]\"\n"},
			{"read x; " + probe + "; echo \"[$BASH]\"; read x", "go\n"},
		} {
			var info ptyInfo
			s.MustCall("terminal_pty_open", map[string]any{"cmd": c.cmd}, &info)
			out := ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": c.input,
				"wait_for": `\[/bin/bash\]`})
			if !out.Matched || !strings.Contains(out.Data, want) {
				t.Errorf("pty %q: %q, want %q and [/bin/bash]", c.cmd, out.Data, want)
			}
			s.MustCall("terminal_pty_close", map[string]any{"session_id": info.SessionID}, nil)
		}
		checkMarker(t)
	})
	t.Run("hive run", func(t *testing.T) {
		c := hivetest.Command(t, state, "run", "--json", "--", probe)
		c.Env = append(c.Env, clientEnv...)
		b, err := c.Output()
		if err != nil {
			t.Fatalf("hive run: %v %s", err, b)
		}
		id := strings.TrimSpace(string(b))
		if i := strings.Index(id, `"id":"`); i >= 0 {
			id = id[i+6:]
			id = id[:strings.IndexByte(id, '"')]
		}
		var st taskStatus
		s.MustCall("status", map[string]any{"id": id, "wait_seconds": 20}, &st)
		if strings.TrimSpace(st.StdoutTail) != want {
			t.Errorf("hive run printed %q, want %q", st.StdoutTail, want)
		}
		checkMarker(t)
	})
}

// jobLogs is terminal_job_logs' answer as a client reads it.
type jobLogs struct {
	Status          string  `json:"status"`
	ExitCode        *int    `json:"exit_code"`
	TimedOut        bool    `json:"timed_out"`
	SemanticStatus  *string `json:"semantic_status"`
	SemanticMessage *string `json:"semantic_message"`
	Warning         *string `json:"warning"`
	Stdout          *struct {
		Data string `json:"data"`
	} `json:"stdout"`
}

// A command promoted to a background job keeps terminal_exec's meaning:
// its loose end and terminal_job_logs say what grep's exit 1 means, and
// reading the end there clears the loose end, as status does.
func TestPromotedJobKeepsTheEnvelope(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "f.txt"), []byte("alpha\nbeta\n"), 0o600)
	gate := filepath.Join(t.TempDir(), "gate")
	s := hivetest.Connect(t, state, cwd)
	if err := s.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var e envelope
	s.MustCall("terminal_exec", map[string]any{"cmd": fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; grep zeta f.txt", gate),
		"auto_background_after_sec": 0.2}, &e)
	if !e.AutoBackgrounded || e.JobID == nil {
		t.Fatalf("not promoted: %+v", e)
	}
	id := *e.JobID
	// While it runs, reading its logs leaves its loose end alone.
	var logs jobLogs
	text := s.MustCall("terminal_job_logs", map[string]any{"job_id": id}, &logs)
	if logs.Status != "running" || logs.SemanticStatus != nil || logs.TimedOut {
		t.Errorf("running: %s %+v", text, logs)
	}
	if _, _, ok := todoFor(s, id); !ok {
		t.Fatal("the running job has no loose end")
	}
	os.WriteFile(gate, nil, 0o600)
	s.WaitFor("the completion", func(_, logs []string) bool {
		return len(logs) > 0 && strings.Contains(logs[len(logs)-1], "exit 1")
	})
	_, summary, ok := todoFor(s, id)
	if !ok || !strings.Contains(summary, "done, exit 1 (ok: No matches found)") || !strings.Contains(summary, "no output") ||
		strings.Contains(summary, ".out") || strings.Contains(summary, ".err") {
		t.Errorf("loose end %q: want the exit's meaning, no output and no paths", summary)
	}
	text = s.MustCall("terminal_job_logs", map[string]any{"job_id": id, "wait_until_exit": true}, &logs)
	if logs.Status != "done" || logs.ExitCode == nil || *logs.ExitCode != 1 || str(logs.SemanticStatus) != "ok" ||
		str(logs.SemanticMessage) != "No matches found" || logs.TimedOut || logs.Warning != nil {
		t.Errorf("logs %+v", logs)
	}
	if !strings.Contains(text, "exit 1 (ok: No matches found)") {
		t.Errorf("logs text %q lacks the meaning", text)
	}
	if _, summary, ok := todoFor(s, id); ok {
		t.Errorf("terminal_job_logs read the end but the loose end remains: %q", summary)
	}
}

// terminal_job_start, run and status tell the same meaning as
// terminal_exec: semantic status, timeout, warning.
func TestJobViewsShareTheMeaning(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	os.WriteFile(filepath.Join(cwd, "f.txt"), []byte("alpha\n"), 0o600)
	s := hivetest.Connect(t, state, cwd)
	tests := []struct {
		name, cmd   string
		timeout     float64
		exit        *int
		status, msg string
		timedOut    bool
		warning     bool
	}{
		{"grep no match", "grep zeta f.txt", 0, ptr(1), "ok", "No matches found", false, false},
		{"diff differs", "echo a > a; echo b > b; diff a b", 0, ptr(1), "ok", "Files differ", false, false},
		{"plain error", "ls /no/such/dir", 0, ptr(2), "error", "Serious trouble (e.g. a file or directory given does not exist or cannot be read)", false, false},
		{"signal", "kill -9 $$", 0, ptr(137), "signal", "Killed by SIGKILL (9)", false, false},
		{"timeout", "sleep 30", 0.3, nil, "error", "Timed out after 300ms", true, false},
		{"destructive warning", "mkdir -p d && rm -rf d", 0, ptr(0), "ok", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"cmd": tt.cmd}
			if tt.timeout > 0 {
				args["timeout_sec"] = tt.timeout
			}
			var st struct {
				JobID string `json:"job_id"`
			}
			s.MustCall("terminal_job_start", args, &st)
			var logs jobLogs
			s.MustCall("terminal_job_logs", map[string]any{"job_id": st.JobID, "wait_until_exit": true, "wait_timeout_sec": 20}, &logs)
			if tt.exit != nil && (logs.ExitCode == nil || *logs.ExitCode != *tt.exit) {
				t.Errorf("exit %v, want %d", logs.ExitCode, *tt.exit)
			}
			if str(logs.SemanticStatus) != tt.status || !strings.HasPrefix(str(logs.SemanticMessage)+"<nil>", tt.msg) ||
				tt.msg == "" && logs.SemanticMessage != nil || logs.TimedOut != tt.timedOut || (logs.Warning != nil) != tt.warning {
				t.Errorf("terminal_job_logs %+v (message %q, warning %q)", logs, str(logs.SemanticMessage), str(logs.Warning))
			}
			// status, the other view of the same job.
			var ts struct {
				Status          string `json:"status"`
				SemanticStatus  string `json:"semantic_status"`
				SemanticMessage string `json:"semantic_message"`
			}
			text := s.MustCall("status", map[string]any{"id": st.JobID}, &ts)
			if ts.SemanticStatus != tt.status || !strings.HasPrefix(ts.SemanticMessage, tt.msg) || !strings.Contains(text, "("+tt.status) {
				t.Errorf("status %q %+v", text, ts)
			}
		})
	}
	// run answers inline with the same meaning.
	var ts struct {
		SemanticStatus  string `json:"semantic_status"`
		SemanticMessage string `json:"semantic_message"`
	}
	text := s.MustCall("run", map[string]any{"cmd": "grep zeta f.txt", "wait_seconds": 10}, &ts)
	if ts.SemanticStatus != "ok" || ts.SemanticMessage != "No matches found" || !strings.Contains(text, "exit 1 (ok: No matches found)") {
		t.Errorf("run %q %+v", text, ts)
	}
}

func ptr(n int) *int { return &n }

// An empty stream has no file: no view names one for it.
func TestEmptyStreamHasNoPath(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	if err := s.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var st taskStatus
	text := s.MustCall("run", map[string]any{"cmd": "echo out", "wait_seconds": 10}, &st)
	if st.StdoutPath == "" || st.StderrPath != "" || strings.Contains(text, ".err") {
		t.Errorf("inline run %q %+v: want a stdout path and no stderr path", text, st)
	}
	if _, err := os.Stat(st.StdoutPath); err != nil {
		t.Errorf("the stdout path named does not exist: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "bash-tasks", st.ID+".err")); !os.IsNotExist(err) {
		t.Fatalf("an empty stderr has a file (%v): then naming it would be right", err)
	}
	// A background task's loose end.
	gate := filepath.Join(t.TempDir(), "gate")
	s.MustCall("run", map[string]any{"cmd": fmt.Sprintf("while [ ! -e %s ]; do sleep 0.02; done; echo out", gate), "wait_seconds": 0}, &st)
	os.WriteFile(gate, nil, 0o600)
	s.WaitFor("the completion", func(_, logs []string) bool {
		return len(logs) > 0 && strings.Contains(logs[len(logs)-1], "done, exit 0")
	})
	_, summary, _ := todoFor(s, st.ID)
	if !strings.Contains(summary, "stdout "+filepath.Join(state, "bash-tasks", st.ID+".out")+" (4 B), stderr empty") || strings.Contains(summary, ".err") {
		t.Errorf("loose end %q: want stdout's path and stderr empty", summary)
	}
	var st2 taskStatus
	text = s.MustCall("status", map[string]any{"id": st.ID}, &st2)
	if st2.StdoutPath == "" || st2.StderrPath != "" || strings.Contains(text, ".err") {
		t.Errorf("status %q %+v", text, st2)
	}
	// The CLI's JSON.
	out, err := hivetest.Run(t, state, "ps", "--all", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, st.ID+".out") || strings.Contains(out, ".err") {
		t.Errorf("hive ps --all --json names a file that does not exist:\n%s", out)
	}
	// terminal_job_logs of an empty stream: empty data.
	var logs struct {
		Stderr *struct {
			Data       string `json:"data"`
			NextOffset int64  `json:"next_offset"`
		} `json:"stderr"`
	}
	s.MustCall("terminal_job_logs", map[string]any{"job_id": st.ID, "stream": "stderr"}, &logs)
	if logs.Stderr == nil || logs.Stderr.Data != "" || logs.Stderr.NextOffset != 0 {
		t.Errorf("stderr chunk %+v", logs.Stderr)
	}
}

// shell takes the seed's boolean and the name form; anything else is
// refused naming the field.
func TestExecShellArgument(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	for _, tt := range []struct {
		shell     any
		kind      string
		autoShell bool
	}{{true, "bash", false}, {false, "direct", false}, {"bash", "bash", false}, {"", "direct", false}} {
		var e envelope
		s.MustCall("terminal_exec", map[string]any{"cmd": "echo hi", "shell": tt.shell}, &e)
		if e.ShellKind != tt.kind || e.AutoShell != tt.autoShell || e.Stdout != "hi\n" {
			t.Errorf("shell=%#v: %+v, want shell_kind %s", tt.shell, e, tt.kind)
		}
	}
	for _, bad := range []any{5, []string{"bash"}, "zsh"} {
		text, isErr := s.Call("terminal_exec", map[string]any{"cmd": "echo hi", "shell": bad}, nil)
		if !isErr || !strings.Contains(text, "shell") {
			t.Errorf("shell=%#v: isError=%v %q, want an error naming shell", bad, isErr, text)
		}
	}
}
