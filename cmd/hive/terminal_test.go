package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivetools/hive/internal/hivetest"
)

type envelope struct {
	ExitCode             *int    `json:"exit_code"`
	Stdout               string  `json:"stdout"`
	Stderr               string  `json:"stderr"`
	StdoutTruncatedBytes int64   `json:"stdout_truncated_bytes"`
	StderrTruncatedBytes int64   `json:"stderr_truncated_bytes"`
	RuntimeMs            int64   `json:"runtime_ms"`
	Pid                  int     `json:"pid"`
	OutputHandle         *string `json:"output_handle"`
	TimedOut             bool    `json:"timed_out"`
	SemanticStatus       string  `json:"semantic_status"`
	SemanticMessage      *string `json:"semantic_message"`
	Warning              *string `json:"warning"`
	AutoBackgrounded     bool    `json:"auto_backgrounded"`
	JobID                *string `json:"job_id"`
	ShellKind            string  `json:"shell_kind"`
	AutoShell            bool    `json:"auto_shell"`
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestExecEnvelope(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, "sub"), 0o700)
	os.WriteFile(filepath.Join(cwd, "f.txt"), []byte("alpha\nbeta\n"), 0o600)
	s := hivetest.Connect(t, state, cwd)
	tests := []struct {
		name  string
		args  map[string]any
		check func(t *testing.T, e envelope)
	}{
		{"direct", map[string]any{"cmd": "echo 'a|b'"}, func(t *testing.T, e envelope) {
			if e.Stdout != "a|b\n" || e.ShellKind != "direct" || e.AutoShell || *e.ExitCode != 0 || e.SemanticStatus != "ok" || e.Pid == 0 {
				t.Errorf("%+v", e)
			}
		}},
		{"pipeline", map[string]any{"cmd": "printf 'x\\ny\\n' | wc -l"}, func(t *testing.T, e envelope) {
			if strings.TrimSpace(e.Stdout) != "2" || e.ShellKind != "bash" || !e.AutoShell {
				t.Errorf("%+v", e)
			}
		}},
		{"grep no match", map[string]any{"cmd": "grep zeta f.txt"}, func(t *testing.T, e envelope) {
			if *e.ExitCode != 1 || e.SemanticStatus != "ok" || str(e.SemanticMessage) != "No matches found" {
				t.Errorf("%+v", e)
			}
		}},
		{"error exit", map[string]any{"cmd": "ls /no/such/path"}, func(t *testing.T, e envelope) {
			if *e.ExitCode == 0 || e.SemanticStatus != "error" || e.Stderr == "" {
				t.Errorf("%+v", e)
			}
		}},
		{"signal", map[string]any{"cmd": "kill -9 $$"}, func(t *testing.T, e envelope) {
			if *e.ExitCode != 137 || e.SemanticStatus != "signal" || !strings.Contains(str(e.SemanticMessage), "SIGKILL") {
				t.Errorf("%+v", e)
			}
		}},
		{"not found", map[string]any{"cmd": "no-such-cmd-hive"}, func(t *testing.T, e envelope) {
			if e.ExitCode != nil || e.SemanticStatus != "error" || !strings.Contains(str(e.SemanticMessage), "not found") {
				t.Errorf("%+v", e)
			}
		}},
		{"destructive warning still runs", map[string]any{"cmd": "mkdir -p d/e && rm -rf d && echo gone"}, func(t *testing.T, e envelope) {
			if e.Warning == nil || e.Stdout != "gone\n" {
				t.Errorf("%+v", e)
			}
			if _, err := os.Stat(filepath.Join(cwd, "d")); !os.IsNotExist(err) {
				t.Errorf("rm did not run: %v", err)
			}
		}},
		{"quoted words warn not", map[string]any{"cmd": "echo 'rm -rf /'"}, func(t *testing.T, e envelope) {
			if e.Warning != nil {
				t.Errorf("warning %q", *e.Warning)
			}
		}},
		{"relative cwd", map[string]any{"cmd": "pwd", "cwd": "sub"}, func(t *testing.T, e envelope) {
			if e.Stdout != filepath.Join(cwd, "sub")+"\n" {
				t.Errorf("%q", e.Stdout)
			}
		}},
		{"stdin and env, zsh vars stripped", map[string]any{"cmd": "cat; echo \"$HIVE_T|${ZDOTDIR-unset}|${ZSH_X-unset}\"", "stdin": "in:",
			"env": map[string]string{"HIVE_T": "v", "ZDOTDIR": "/z", "ZSH_X": "1"}}, func(t *testing.T, e envelope) {
			if e.Stdout != "in:v|unset|unset\n" {
				t.Errorf("%q", e.Stdout)
			}
		}},
		{"invalid utf-8 replaced", map[string]any{"cmd": "printf 'a\\xffb'"}, func(t *testing.T, e envelope) {
			if e.Stdout != "a\uFFFDb" {
				t.Errorf("%q", e.Stdout)
			}
		}},
		{"forced bash", map[string]any{"cmd": "echo $0", "shell": "bash"}, func(t *testing.T, e envelope) {
			if e.ShellKind != "bash" || e.AutoShell || !strings.Contains(e.Stdout, "bash") {
				t.Errorf("%+v", e)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e envelope
			s.MustCall("terminal_exec", tt.args, &e)
			tt.check(t, e)
		})
	}
}

func TestExecBadInput(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"cmd": ""}, "cmd"},
		{map[string]any{"cmd": "ls", "shell": "zsh"}, "shell"},
		{map[string]any{"cmd": "ls", "shell": "/bin/sh"}, "shell"},
		{map[string]any{"cmd": "ls", "timeout_sec": -1}, "timeout_sec"},
		{map[string]any{"cmd": "ls", "auto_background_after_sec": -2}, "auto_background_after_sec"},
		{map[string]any{"cmd": "ls", "max_output_kb": 0}, "max_output_kb"},
		{map[string]any{"cmd": "ls", "cwd": "/no/such/dir"}, "cwd"},
	}
	for _, tt := range tests {
		text, isErr := s.Call("terminal_exec", tt.args, nil)
		if !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("%v: isError=%v %q, want an error naming %q", tt.args, isErr, text, tt.want)
		}
	}
}

// Truncated output keeps head and tail inline and the whole under a handle.
func TestExecTruncationAndHandles(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var e envelope
	s.MustCall("terminal_exec", map[string]any{"cmd": "seq 1 100000", "max_output_kb": 4}, &e)
	var want strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	full := want.String()
	if e.OutputHandle == nil || e.StdoutTruncatedBytes <= 0 {
		t.Fatalf("not truncated: %+v", e.StdoutTruncatedBytes)
	}
	if !strings.HasPrefix(e.Stdout, "1\n2\n3\n") || !strings.HasSuffix(e.Stdout, "99999\n100000\n") || !strings.Contains(e.Stdout, "truncated") {
		t.Errorf("inline head/tail wrong: %q … %q", e.Stdout[:20], e.Stdout[len(e.Stdout)-20:])
	}
	if shown := int64(len(full)) - e.StdoutTruncatedBytes; shown > 4096 || shown < 4000 {
		t.Errorf("shown %d bytes of %d, want about 4 KiB", shown, len(full))
	}
	var got strings.Builder
	off := int64(0)
	for i := 0; ; i++ {
		var p struct {
			Data       string `json:"data"`
			NextOffset int64  `json:"next_offset"`
			EOF        bool   `json:"eof"`
			Expired    bool   `json:"expired"`
		}
		s.MustCall("terminal_output_get", map[string]any{"output_handle": *e.OutputHandle, "since_offset": off, "max_kb": 128}, &p)
		if p.Expired {
			t.Fatal("handle expired at once")
		}
		got.WriteString(p.Data)
		off = p.NextOffset
		if p.EOF {
			break
		}
		if i > 100 {
			t.Fatal("paging does not end")
		}
	}
	if got.String() != full {
		t.Errorf("paged %d bytes, want %d", got.Len(), len(full))
	}
	var p struct {
		Expired bool `json:"expired"`
	}
	text := s.MustCall("terminal_output_get", map[string]any{"output_handle": "out_000000000000"}, &p)
	if !p.Expired || !strings.Contains(text, "re-run") {
		t.Errorf("unknown handle: %q %+v", text, p)
	}
}

func TestExecAutoBackgroundAndJobLogs(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var e envelope
	s.MustCall("terminal_exec", map[string]any{"cmd": "echo first; sleep 1; echo second", "auto_background_after_sec": 0.3}, &e)
	if !e.AutoBackgrounded || e.ExitCode != nil || e.JobID == nil || e.Stdout != "first\n" {
		t.Fatalf("not promoted: %+v", e)
	}
	var logs struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
		Stdout   struct {
			Data       string `json:"data"`
			NextOffset int64  `json:"next_offset"`
		} `json:"stdout"`
		WaitedMs int64 `json:"waited_ms"`
	}
	s.MustCall("terminal_job_logs", map[string]any{"job_id": *e.JobID, "since_offset": 6, "wait_until_exit": true, "wait_timeout_sec": 30}, &logs)
	if logs.Status != "done" || *logs.ExitCode != 0 || logs.Stdout.Data != "second\n" || logs.Stdout.NextOffset != 13 {
		t.Fatalf("logs: %+v", logs)
	}
	// terminal_job_logs read the end: the promoted job's loose end is done.
	if _, summary, ok := todoFor(s, *e.JobID); ok {
		t.Errorf("promoted job todo left after its end was read: %q", summary)
	}
}

func TestExecForegroundTimeoutKillsGroup(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	pidFile := filepath.Join(t.TempDir(), "pid")
	var e envelope
	s.MustCall("terminal_exec", map[string]any{"cmd": fmt.Sprintf("sleep 3600 & echo $! > %s; echo started; wait", pidFile),
		"auto_background_after_sec": 0, "timeout_sec": 0.5}, &e)
	if !e.TimedOut || e.AutoBackgrounded || e.Stdout != "started\n" || e.ExitCode == nil {
		t.Fatalf("%+v", e)
	}
	pid := waitPidFile(t, pidFile)
	if hivetest.Alive(pid) {
		t.Errorf("background child %d survived the timeout", pid)
	}
}

func TestTerminalJobs(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var st struct {
		JobID  string `json:"job_id"`
		Status string `json:"status"`
		Pid    int    `json:"pid"`
	}
	s.MustCall("terminal_job_start", map[string]any{"cmd": "echo out1; echo err1 >&2; sleep 30; echo out2", "name": "reader"}, &st)
	if st.JobID == "reader" || st.Status != "running" || st.Pid == 0 { // its own id; the name addresses it

		t.Fatalf("start: %+v", st)
	}
	type chunk struct {
		Data       string `json:"data"`
		NextOffset int64  `json:"next_offset"`
	}
	var logs struct {
		Status string `json:"status"`
		Stdout *chunk `json:"stdout"`
		Stderr *chunk `json:"stderr"`
	}
	s.MustCall("terminal_job_logs", map[string]any{"job_id": "reader", "wait_for_output": true, "wait_timeout_sec": 10}, &logs)
	if logs.Stdout == nil || logs.Stderr == nil || !strings.HasPrefix("out1\n", logs.Stdout.Data) || logs.Status != "running" {
		t.Fatalf("first logs: %+v", logs)
	}
	var list struct {
		Jobs []struct {
			JobID  string `json:"job_id"`
			Status string `json:"status"`
		} `json:"jobs"`
	}
	s.MustCall("terminal_job_list", map[string]any{"state": "running"}, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].JobID != st.JobID {
		t.Errorf("list running: %+v", list)
	}
	if text, isErr := s.Call("terminal_job_list", map[string]any{"state": "bogus"}, nil); !isErr || !strings.Contains(text, "state") {
		t.Errorf("bad state: %q", text)
	}
	s.MustCall("terminal_job_kill", map[string]any{"job_id": "reader", "force": true}, nil)
	logs.Stdout, logs.Stderr = nil, nil
	s.MustCall("terminal_job_logs", map[string]any{"job_id": "reader", "wait_until_exit": true, "stream": "stderr"}, &logs)
	if logs.Status != "killed" || logs.Stderr == nil || logs.Stderr.Data != "err1\n" || logs.Stdout != nil {
		t.Errorf("after kill: %+v", logs)
	}
	s.MustCall("terminal_job_list", map[string]any{"state": "killed"}, &list)
	if len(list.Jobs) != 1 {
		t.Errorf("list killed: %+v", list)
	}
}

// An offset older than what is kept answers with the kept bytes and says
// how many were dropped.
func TestJobLogsDroppedOffset(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--file-cap", "1000")
	s := hivetest.Connect(t, state, t.TempDir())
	var st struct {
		JobID string `json:"job_id"`
	}
	// 6 MiB: more than the file cap and the 4 MiB ring together.
	s.MustCall("terminal_job_start", map[string]any{"cmd": "head -c 6291456 /dev/zero | tr '\\0' x"}, &st)
	var logs struct {
		Status string `json:"status"`
		Stdout struct {
			Offset       int64 `json:"offset"`
			DroppedBytes int64 `json:"dropped_bytes"`
			NextOffset   int64 `json:"next_offset"`
		} `json:"stdout"`
	}
	s.MustCall("terminal_job_logs", map[string]any{"job_id": st.JobID, "wait_until_exit": true, "since_offset": 2000, "stream": "stdout", "max_kb": 1}, &logs)
	if logs.Status != "done" || logs.Stdout.DroppedBytes == 0 || logs.Stdout.Offset != 2000+logs.Stdout.DroppedBytes {
		t.Fatalf("%+v", logs)
	}
}

// tools/list and the instructions stay small: they are paid for in every
// agent turn.
func TestToolsListSize(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	res, err := s.ListTools(t.Context(), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	instr := s.InitializeResult().Instructions
	ib, _ := json.Marshal(instr)
	t.Logf("tools/list: %d tools, %d bytes; instructions %d bytes; together %d bytes", len(res.Tools), len(b), len(ib), len(b)+len(ib))
	if instr == "" {
		t.Error("no instructions at initialize")
	}
	// The seed's tool preference: files through terminal_exec, search
	// through terminal_rg and terminal_glob, a warning re-read, shell_kind.
	for _, want := range []string{"Files: terminal_exec", "terminal_rg", "terminal_glob", "warning", "re-read", "shell_kind"} {
		if !strings.Contains(instr, want) {
			t.Errorf("instructions lack %q:\n%s", want, instr)
		}
	}
	if len(b)+len(ib) > 16000 { // issue 24: at most 16 000 bytes with every group (DESIGN: 18 KB)
		t.Errorf("tools/list (%d bytes) and instructions (%d bytes) are %d bytes, over 16 000", len(b), len(ib), len(b)+len(ib))
	}
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
	}
	for _, n := range []string{"run", "status", "kill", "terminal_exec", "terminal_job_start", "terminal_job_logs", "terminal_job_list",
		"terminal_job_kill", "terminal_output_get", "terminal_pty_open", "terminal_pty_send", "terminal_pty_read",
		"terminal_pty_resize", "terminal_pty_close", "terminal_pty_list", "get_loose_ends", "cancel_loose_end",
		"set_status", "mark_todos_done", "terminal_rg", "terminal_glob", "remind", "read_inbox", "compact", "get_agent_meta",
		"send_message", "list_agents"} {
		if !names[n] {
			t.Errorf("tool %s missing", n)
		}
	}
	s2 := hivetest.Connect(t, state, t.TempDir(), "--groups", "execution")
	res2, _ := s2.ListTools(t.Context(), &mcp.ListToolsParams{})
	var got []string
	for _, tool := range res2.Tools {
		got = append(got, tool.Name)
	}
	if strings.Join(got, ",") != "compact,kill,mark_todos_done,run,set_status,status" {
		t.Errorf("execution group: %v", got)
	}
	// The instructions speak of the tools a session has.
	if in := s2.InitializeResult().Instructions; strings.Contains(in, "terminal_") || strings.Contains(in, "read_inbox") || !strings.Contains(in, "loose end") {
		t.Errorf("instructions for the execution group:\n%s", in)
	}
}

// A long wait sends progress notifications when the client gave a token.
func TestJobLogsProgress(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var st struct {
		JobID string `json:"job_id"`
	}
	s.MustCall("terminal_job_start", map[string]any{"cmd": "sleep 2.5; echo end"}, &st)
	params := &mcp.CallToolParams{Name: "terminal_job_logs", Arguments: map[string]any{"job_id": st.JobID, "wait_until_exit": true, "wait_timeout_sec": 20}}
	params.SetProgressToken("tok-1")
	res, err := s.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("logs: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"status":"done"`) {
		t.Fatalf("waited logs: %s", b)
	}
	if p := s.Progress(); len(p) == 0 || !strings.Contains(p[0], st.JobID) {
		t.Errorf("progress notifications: %q", p)
	}
}

// Output past the file cap is still shown whole while the memory ring
// has it: for jobs the daemon runs itself. A held job's bytes past the
// cap are counted, not kept (the holder keeps no ring): TestHeldOutputPastFileCap.
func TestExecOutputPastFileCap(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state, "--file-cap", "1000", "--hold-jobs=false")
	s := hivetest.Connect(t, state, t.TempDir())
	var e envelope
	s.MustCall("terminal_exec", map[string]any{"cmd": "seq 1 20000"}, &e)
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if e.Stdout != want.String() || e.StdoutTruncatedBytes != 0 {
		t.Errorf("stdout %d bytes (truncated %d), want the whole %d", len(e.Stdout), e.StdoutTruncatedBytes, want.Len())
	}
}

func TestPTYAndSearchBadInput(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"terminal_pty_open", map[string]any{"cols": 5000}, "cols"},
		{"terminal_pty_open", map[string]any{"name": "Bad Name"}, "name"},
		{"terminal_pty_open", map[string]any{"cwd": "/no/such/dir"}, "cwd"},
		{"terminal_pty_send", map[string]any{"session_id": "pty_00000000", "input": "x"}, "session_id"},
		{"terminal_pty_read", map[string]any{"session_id": "nope"}, "session_id"},
		{"terminal_rg", map[string]any{"pattern": "x", "type": "no-such-type"}, "type"},
		{"terminal_rg", map[string]any{"pattern": "x", "path": "/no/such/path"}, "path"},
		{"terminal_glob", map[string]any{"pattern": "[unclosed"}, "pattern"},
		{"terminal_job_logs", map[string]any{"job_id": "x", "stream": "both2"}, "stream"},
		{"terminal_output_get", map[string]any{"output_handle": "out_1", "stream": "stdin"}, "stream"},
	}
	for _, tt := range tests {
		text, isErr := s.Call(tt.tool, tt.args, nil)
		if !isErr || !strings.Contains(text, tt.want) {
			t.Errorf("%s %v: isError=%v %q, want an error naming %q", tt.tool, tt.args, isErr, text, tt.want)
		}
	}
}

// terminal_job_list lists the newest 200 jobs and says so when there
// are more: a list is never cut short in silence.
func TestJobListSaysWhenCut(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	s := hivetest.Connect(t, state, t.TempDir())
	var ids []string
	start := func(n int) {
		for range n {
			var r struct {
				ID string `json:"id"`
			}
			s.MustCall("run", map[string]any{"cmd": "true", "wait_seconds": 0}, &r)
			ids = append(ids, r.ID)
		}
	}
	var l struct {
		Jobs []struct {
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	start(200)
	if text := s.MustCall("terminal_job_list", map[string]any{}, &l); len(l.Jobs) != 200 || strings.Contains(text, "newest") {
		t.Errorf("200 jobs listed: %d jobs, text %q; want all 200 and no note", len(l.Jobs), text)
	}
	start(1)
	l.Jobs = nil
	if text := s.MustCall("terminal_job_list", map[string]any{}, &l); len(l.Jobs) != 200 || !strings.Contains(text, "the newest 200") {
		t.Errorf("201 jobs listed: %d jobs, text %q; want 200 and a note that older ones are not listed", len(l.Jobs), text)
	}
	for _, j := range l.Jobs {
		if j.JobID == ids[0] {
			t.Errorf("the oldest job %s is listed among the newest 200", ids[0])
		}
	}
}
