package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectEnv is connect with extra environment for the bridge (and so for
// the daemon it starts and the session's commands).
func connectEnv(t *testing.T, state, cwd string, env ...string) *session {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-env", Version: "1"}, nil)
	cmd := hiveCmd(state, "mcp")
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = cwd
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect bridge: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &session{t: t, cs: cs, ev: &events{changed: make(chan struct{}, 1)}}
}

// One shell policy for run, terminal_exec, terminal_job_start, hive run
// and PTY shells: /bin/bash even when a bash comes first on PATH, no
// ZDOTDIR or ZSH_*, and SHELL is that bash, never the client's.
func TestOneShellPolicy(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash here")
	}
	state := stateDir(t)
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
		s.mustCall("run", map[string]any{"cmd": probe, "wait_seconds": 10}, &st)
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
			s.mustCall("terminal_exec", args, &e)
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
		s.mustCall("terminal_job_start", map[string]any{"cmd": probe}, &st)
		var logs struct {
			Status string `json:"status"`
			Stdout struct {
				Data string `json:"data"`
			} `json:"stdout"`
		}
		s.mustCall("terminal_job_logs", map[string]any{"job_id": st.JobID, "wait_until_exit": true, "wait_timeout_sec": 20}, &logs)
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
			s.mustCall("terminal_pty_open", map[string]any{"cmd": c.cmd}, &info)
			out := s.pty("terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": c.input,
				"wait_for": `\[/bin/bash\]`})
			if !out.Matched || !strings.Contains(out.Data, want) {
				t.Errorf("pty %q: %q, want %q and [/bin/bash]", c.cmd, out.Data, want)
			}
			s.mustCall("terminal_pty_close", map[string]any{"session_id": info.SessionID}, nil)
		}
		checkMarker(t)
	})
	t.Run("hive run", func(t *testing.T) {
		c := hiveCmd(state, "run", "--json", "--", probe)
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
		s.mustCall("status", map[string]any{"id": id, "wait_seconds": 20}, &st)
		if strings.TrimSpace(st.StdoutTail) != want {
			t.Errorf("hive run printed %q, want %q", st.StdoutTail, want)
		}
		checkMarker(t)
	})
}
