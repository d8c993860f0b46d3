package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/policy/policytest"
)

// TestPolicyCorpus sends the bypass corpus through a real daemon whose
// hive.toml denies policytest.Rules: each spelling is refused by
// terminal_exec, run, terminal_job_start and hive run with "policy" in the
// error, each near-miss runs, and the canary survives.
//
// SAFETY: if the policy let a command through, it would run for real. So
// the commands run in a scratch git repository with no remote (a push
// goes nowhere), remove only under this test's temp dir, where canary/
// shows a bypass by going missing, and download nothing (file:// of a
// file that does not exist).
func TestPolicyCorpus(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	alive := filepath.Join(tmp, "canary", "alive")
	for _, dir := range []string{"canary", "scratch1", "scratch2", "scratch3", "scratch4"} {
		if err := os.MkdirAll(filepath.Join(tmp, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{alive, filepath.Join(tmp, "scratch2", "file"), filepath.Join(tmp, "scratch4", "file")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	canaryAlive := func(after string) {
		t.Helper()
		if _, err := os.Stat(alive); err != nil {
			t.Fatalf("the canary is gone after %s: a command bypassed the policy", after)
		}
	}

	state := hivetest.StateDir(t)
	var toml strings.Builder
	toml.WriteString("[policy]\ndeny = [\n")
	for _, r := range policytest.Rules {
		toml.WriteString("  " + strconv.Quote(r) + ",\n")
	}
	toml.WriteString("]\nwarn = [\"echo warned\"]\n")
	if err := os.WriteFile(filepath.Join(state, "hive.toml"), []byte(toml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	d := hivetest.StartDaemon(t, state)
	s := hivetest.Connect(t, state, repo)

	for i, c := range policytest.Denied {
		cmd := policytest.Expand(c, tmp)
		tools := []string{"terminal_exec", "run"}
		if i%8 == 0 {
			tools = append(tools, "terminal_job_start")
		}
		for _, tool := range tools {
			text, isErr := s.Call(tool, map[string]any{"cmd": cmd}, nil)
			if !isErr || !strings.Contains(text, "policy") {
				t.Errorf("%s(%q) = %q (error %v), want a refusal by policy", tool, cmd, text, isErr)
			}
		}
		canaryAlive(cmd)
	}
	for _, c := range policytest.Denied[:3] {
		cmd := policytest.Expand(c, tmp)
		run := hivetest.Command(t, state, "run", "--", cmd)
		run.Dir = repo
		out, err := run.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "policy") {
			t.Errorf("hive run %q: %v, %q: want a refusal by policy and a non-zero exit", cmd, err, out)
		}
	}
	for _, c := range policytest.Allowed {
		cmd := policytest.Expand(c, tmp)
		var env struct {
			ExitCode *int `json:"exit_code"`
		}
		text, isErr := s.Call("terminal_exec", map[string]any{"cmd": cmd}, &env)
		if isErr || env.ExitCode == nil {
			t.Errorf("terminal_exec(%q) = %q (error %v), want it to run", cmd, text, isErr)
		}
		canaryAlive(cmd)
	}
	if _, err := os.Stat(filepath.Join(tmp, "scratch3")); !os.IsNotExist(err) {
		t.Errorf("scratch3 after rm -rf: %v, want it removed (the near-misses ran)", err)
	}

	// A warn rule adds to the answer's warning.
	var env struct {
		Warning *string `json:"warning"`
	}
	s.MustCall("terminal_exec", map[string]any{"cmd": "echo warned"}, &env)
	if env.Warning == nil || !strings.Contains(*env.Warning, `matches warn rule "echo warned"`) {
		t.Errorf("warning of a warn rule's command: %v", env.Warning)
	}

	// A PTY session: a line sent is checked before it is written.
	var open struct {
		SessionID string `json:"session_id"`
	}
	s.MustCall("terminal_pty_open", map[string]any{"cwd": repo}, &open)
	text, isErr := s.Call("terminal_pty_send", map[string]any{"session_id": open.SessionID, "input": "git push -f\n"}, nil)
	if !isErr || !strings.Contains(text, "policy") {
		t.Errorf("terminal_pty_send of a denied line = %q (error %v), want a refusal by policy", text, isErr)
	}

	// The envelope logged the refusals.
	if log := d.Log(); !strings.Contains(log, "refused by policy") || !strings.Contains(log, "policy refused a command") {
		t.Errorf("the daemon's log has no refusal:\n%s", log)
	}
	canaryAlive("the corpus")
}
