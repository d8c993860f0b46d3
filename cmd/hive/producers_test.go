package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// hiveIn runs a hive subcommand with stdin and returns its stdout, its
// stderr and its exit code.
func hiveIn(t *testing.T, state, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := hivetest.Command(t, state, args...)
	c.Env = append(c.Env, quickRaceExit()...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	c.Run()
	return out.String(), errb.String(), c.ProcessState.ExitCode()
}

// quickRaceExit is the environment that spares a race-enabled hive its
// second of sleep at exit (GORACE atexit_sleep_ms), unless GORACE is set:
// these tests run many short processes.
func quickRaceExit() []string {
	if _, ok := os.LookupEnv("GORACE"); ok {
		return nil
	}
	return []string{"GORACE=atexit_sleep_ms=0"}
}

// mustJSON runs a hive subcommand that must succeed and decodes its
// --json output into v.
func mustJSON(t *testing.T, state string, v any, args ...string) {
	t.Helper()
	out, errs, code := hiveIn(t, state, "", append(args, "--json")...)
	if code != 0 {
		t.Fatalf("hive %v: exit %d: %s", args, code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("hive %v: %q: %v", args, out, err)
	}
}

// The reading commands fail clearly with no daemon and start none; wake
// and todo upsert start one, since what they send is kept.
func TestProducersWithoutDaemon(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, args := range [][]string{
		{"inbox", "ls"}, {"inbox", "next"}, {"inbox", "next", "--wait"}, {"inbox", "ack", "1"},
		{"todo", "ls"}, {"todo", "clear", "--subsystem", "ci", "--key", "k"}, {"turn", "idle"},
	} {
		_, errs, code := hiveIn(t, state, "", args...)
		if code != 1 || !strings.Contains(errs, "no hive daemon is running") {
			t.Errorf("hive %v: exit %d %q", args, code, errs)
		}
		if hivetest.DaemonPid(state) != 0 {
			t.Fatalf("hive %v started a daemon", args)
		}
	}
	var w struct {
		MessageID int64 `json:"message_id"`
	}
	mustJSON(t, state, &w, "wake", "--from", "ci", "build 42 failed")
	if w.MessageID != 1 || !hivetest.Alive(hivetest.DaemonPid(state)) {
		t.Fatalf("wake: %+v, daemon %d", w, hivetest.DaemonPid(state))
	}
	hivetest.StopState(t, state)
	var u struct {
		TodoID int64 `json:"todo_id"`
	}
	mustJSON(t, state, &u, "todo", "upsert", "--subsystem", "ci", "--key", "b", "--summary", "s")
	if u.TodoID < 1 || !hivetest.Alive(hivetest.DaemonPid(state)) {
		t.Fatalf("todo upsert: %+v, daemon %d", u, hivetest.DaemonPid(state))
	}
}

// What a CI watcher and a chat bridge do with the CLI, as real processes:
// a body from a pipe, the message taken and acked, the changed todo as
// loose-ends, and the exit codes: 2 for bad input (naming the flag and
// the rule), 1 for what the daemon refuses. internal/cli's tests go
// through every command line in-process.
func TestProducersCLI(t *testing.T) {
	state := hivetest.StateDir(t)
	hivetest.StartDaemon(t, state)
	if out, errs, code := hiveIn(t, state, "line one\n<two> & three\n", "wake", "--from", "chat:alice@example.org"); code != 0 || out != "message 1 queued\n" {
		t.Fatalf("wake from stdin: %d %q %q", code, out, errs)
	}
	if out, _, code := hiveIn(t, state, "", "todo", "upsert", "--subsystem", "ci", "--key", "build-42", "--summary", "build 42 failed"); code != 0 || out != "todo 1 (ci/build-42)\n" {
		t.Errorf("todo upsert: %d %q", code, out)
	}
	var next struct {
		Empty   bool `json:"empty"`
		Message *struct {
			ID   int64  `json:"id"`
			From string `json:"from"`
			At   int64  `json:"at"`
			Body string `json:"body"`
		} `json:"message"`
	}
	mustJSON(t, state, &next, "inbox", "next", "--wait")
	if next.Message == nil || next.Message.ID != 1 || next.Message.From != "chat:alice@example.org" || next.Message.Body != "line one\n<two> & three\n" || next.Message.At == 0 {
		t.Fatalf("inbox next: %+v", next.Message)
	}
	if out, _, code := hiveIn(t, state, "", "inbox", "ack", "1"); code != 0 || out != "message 1 acked\n" {
		t.Errorf("inbox ack: %d %q", code, out)
	}
	if _, errs, code := hiveIn(t, state, "", "inbox", "ack", "1"); code != 1 || !strings.Contains(errs, "id 1: no message in flight has it") {
		t.Errorf("second ack: %d %q", code, errs)
	}
	mustJSON(t, state, &next, "inbox", "next", "--wait", "--timeout", "10")
	if next.Message == nil || next.Message.ID != 0 || next.Message.From != "loose-ends" || next.Message.Body != "todo ci/build-42: build 42 failed" {
		t.Errorf("loose-ends: %+v", next.Message)
	}
	if _, errs, code := hiveIn(t, state, "", "wake", "--from", "a b", "x"); code != 2 || !strings.Contains(errs, `--from "a b": must be 1-64 characters`) {
		t.Errorf("bad --from: exit %d %q", code, errs)
	}
	var ls struct {
		Undelivered int               `json:"undelivered"`
		Messages    []json.RawMessage `json:"messages"`
	}
	mustJSON(t, state, &ls, "inbox", "ls")
	if ls.Undelivered != 0 || len(ls.Messages) != 0 {
		t.Errorf("inbox at the end: %+v", ls)
	}
}
