package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hiveIn runs a hive subcommand with stdin and returns its stdout, its
// stderr and its exit code.
func hiveIn(t *testing.T, state, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := hiveCmd(state, args...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	c.Run()
	return out.String(), errb.String(), c.ProcessState.ExitCode()
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
	state := stateDir(t)
	for _, args := range [][]string{
		{"inbox", "ls"}, {"inbox", "next"}, {"inbox", "next", "--wait"}, {"inbox", "ack", "1"},
		{"todo", "ls"}, {"todo", "clear", "--subsystem", "ci", "--key", "k"}, {"turn", "idle"},
	} {
		_, errs, code := hiveIn(t, state, "", args...)
		if code != 1 || !strings.Contains(errs, "no hive daemon is running") {
			t.Errorf("hive %v: exit %d %q", args, code, errs)
		}
		if daemonPid(state) != 0 {
			t.Fatalf("hive %v started a daemon", args)
		}
	}
	var w struct {
		MessageID int64 `json:"message_id"`
	}
	mustJSON(t, state, &w, "wake", "--from", "ci", "build 42 failed")
	if w.MessageID != 1 || !processAlive(daemonPid(state)) {
		t.Fatalf("wake: %+v, daemon %d", w, daemonPid(state))
	}
	stopDaemon(t, state)
	var u struct {
		TodoID int64 `json:"todo_id"`
	}
	mustJSON(t, state, &u, "todo", "upsert", "--subsystem", "ci", "--key", "b", "--summary", "s")
	if u.TodoID < 1 || !processAlive(daemonPid(state)) {
		t.Fatalf("todo upsert: %+v, daemon %d", u, daemonPid(state))
	}
}

// What a CI watcher and a chat bridge do with the CLI: wake (argument,
// stdin, "-"), todo upsert|ls|clear, inbox ls|next|ack, turn; human and
// JSON output; bad input exits 2 naming the flag or field and the rule.
func TestProducersCLI(t *testing.T) {
	state := stateDir(t)
	startDaemon(t, state)
	if out, errs, code := hiveIn(t, state, "", "wake", "--from", "ci", "build 42 failed"); code != 0 || out != "message 1 queued\n" {
		t.Fatalf("wake: %d %q %q", code, out, errs)
	}
	if out, _, code := hiveIn(t, state, "line one\n<two> & three\n", "wake", "--from", "chat:alice@example.org"); code != 0 || out != "message 2 queued\n" {
		t.Fatalf("wake from stdin: %d %q", code, out)
	}
	if out, _, code := hiveIn(t, state, "dash", "wake", "-", "--from", "ci"); code != 0 || out != "message 3 queued\n" {
		t.Fatalf("wake -: %d %q", code, out)
	}

	var ls struct {
		Undelivered int `json:"undelivered"`
		Messages    []struct {
			ID       int64  `json:"id"`
			From     string `json:"from"`
			Preview  string `json:"preview"`
			Size     int64  `json:"size"`
			InFlight bool   `json:"in_flight"`
		} `json:"messages"`
	}
	mustJSON(t, state, &ls, "inbox", "ls")
	if ls.Undelivered != 3 || len(ls.Messages) != 3 || ls.Messages[1].Preview != "line one <two> & three" || ls.Messages[1].Size != 23 {
		t.Fatalf("inbox ls: %+v", ls)
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
	mustJSON(t, state, &next, "inbox", "next")
	if next.Message == nil || next.Message.ID != 1 || next.Message.From != "ci" || next.Message.Body != "build 42 failed" || next.Message.At == 0 {
		t.Fatalf("inbox next: %+v", next)
	}
	out, _, _ := hiveIn(t, state, "", "inbox", "ls")
	if !strings.HasPrefix(out, "2 undelivered\n") || !strings.Contains(out, "in flight") || !strings.Contains(out, "chat:alice@example.org") {
		t.Errorf("inbox ls, human:\n%s", out)
	}
	if out, _, code := hiveIn(t, state, "", "inbox", "ack", "1"); code != 0 || out != "message 1 acked\n" {
		t.Errorf("inbox ack: %d %q", code, out)
	}
	if _, errs, code := hiveIn(t, state, "", "inbox", "ack", "1"); code != 1 || !strings.Contains(errs, "id 1: no message in the inbox has it") {
		t.Errorf("second ack: %d %q", code, errs)
	}
	out, _, _ = hiveIn(t, state, "", "inbox", "next")
	if !strings.HasPrefix(out, "message 2 from chat:alice@example.org at ") || !strings.HasSuffix(out, "\nline one\n<two> & three\n\n") {
		t.Errorf("inbox next, human: %q", out)
	}
	hiveIn(t, state, "", "inbox", "ack", "2")
	mustJSON(t, state, &next, "inbox", "next")
	hiveIn(t, state, "", "inbox", "ack", "3")
	next.Message = nil
	mustJSON(t, state, &next, "inbox", "next", "--wait", "--timeout", "0.2")
	if !next.Empty || next.Message != nil {
		t.Errorf("inbox next --wait --timeout 0.2 on an empty inbox: %+v", next)
	}

	if out, _, code := hiveIn(t, state, "", "todo", "upsert", "--subsystem", "ci", "--key", "build-42", "--summary", "build 42 failed"); code != 0 || out != "todo 1 (ci/build-42)\n" {
		t.Errorf("todo upsert: %d %q", code, out)
	}
	var todos struct {
		Todos []struct {
			ID        int64  `json:"id"`
			Subsystem string `json:"subsystem"`
			Key       string `json:"key"`
			Summary   string `json:"summary"`
		} `json:"todos"`
	}
	mustJSON(t, state, &todos, "todo", "ls")
	if len(todos.Todos) != 1 || todos.Todos[0].Key != "build-42" || todos.Todos[0].Summary != "build 42 failed" {
		t.Errorf("todo ls: %+v", todos)
	}
	// The changed todo is what the next turn gets, as loose-ends.
	mustJSON(t, state, &next, "inbox", "next", "--wait", "--timeout", "10")
	if next.Message == nil || next.Message.ID != 0 || next.Message.From != "loose-ends" || next.Message.Body != "todo ci/build-42: build 42 failed" {
		t.Errorf("loose-ends: %+v", next.Message)
	}
	var cleared struct {
		Cleared bool `json:"cleared"`
	}
	mustJSON(t, state, &cleared, "todo", "clear", "--subsystem", "ci", "--key", "build-42")
	if !cleared.Cleared {
		t.Error("todo clear: not cleared")
	}
	if out, _, _ := hiveIn(t, state, "", "todo", "clear", "--subsystem", "ci", "--key", "build-42"); out != "no todo ci/build-42 (nothing to clear)\n" {
		t.Errorf("second clear: %q", out)
	}
	if out, _, _ := hiveIn(t, state, "", "todo", "ls"); out != "no open todos\n" {
		t.Errorf("todo ls: %q", out)
	}

	var turn struct {
		CompactPending *bool `json:"compact_pending"`
	}
	mustJSON(t, state, &turn, "turn", "thinking", "--context-usage", "0.4")
	if turn.CompactPending == nil || *turn.CompactPending {
		t.Errorf("turn thinking: %+v", turn)
	}
	if out, _, code := hiveIn(t, state, "", "turn", "idle"); code != 0 || out != "idle (compact_pending: false)\n" {
		t.Errorf("turn idle: %d %q", code, out)
	}

	for _, tt := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"wake", "x"}, `--from "": must be 1-64 characters`},
		{"", []string{"wake", "--from", "a b", "x"}, `--from "a b": must be 1-64 characters`},
		{"", []string{"wake", "--from", "ci"}, "body: must not be empty"},
		{"", []string{"wake", "--from", "ci", "a", "b"}, "give the body as one argument"},
		{strings.Repeat("x", 1<<20+1), []string{"wake", "--from", "ci"}, "body: more than 1048576 bytes on stdin"},
		{"", []string{"todo", "upsert", "--key", "k", "--summary", "s"}, "--subsystem: must not be empty"},
		{"", []string{"todo", "upsert", "--subsystem", "s", "--summary", "s"}, "--key: must not be empty"},
		{"", []string{"todo", "upsert", "--subsystem", "s", "--key", "k"}, "--summary: must not be empty"},
		{"", []string{"todo", "clear", "--subsystem", "s"}, "--key: must not be empty"},
		{"", []string{"todo", "frob"}, `hive todo "frob": want upsert, clear or ls`},
		{"", []string{"todo"}, "hive todo upsert|clear|ls"},
		{"", []string{"inbox", "ack", "x"}, `ID "x": must be a message id`},
		{"", []string{"inbox", "ack"}, "hive inbox ack ID"},
		{"", []string{"inbox", "next", "--timeout", "5"}, "--timeout: only with --wait"},
		{"", []string{"inbox", "next", "--wait", "--timeout", "-1"}, "--timeout -1: must be 0..1e8"},
		{"", []string{"inbox", "frob"}, `hive inbox "frob": want ls, next or ack`},
		{"", []string{"turn", "sleeping"}, `state "sleeping": must be idle, thinking or compacting`},
		{"", []string{"turn", "idle", "--context-usage", "1.5"}, "--context-usage 1.5: must be 0..1"},
		{"", []string{"turn", "idle", "--context-usage", "lots"}, "invalid value"},
		{"", []string{"turn"}, "hive turn idle|thinking|compacting"},
	} {
		_, errs, code := hiveIn(t, state, tt.stdin, tt.args...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("hive %.60v: exit %d %q, want 2 and %q", tt.args, code, errs, tt.want)
		}
	}
	// Nothing of the refused ones reached the inbox.
	mustJSON(t, state, &ls, "inbox", "ls")
	if ls.Undelivered != 0 || len(ls.Messages) != 0 {
		t.Errorf("after the refused ones: %+v", ls)
	}
	if _, err := os.Stat(filepath.Join(state, "inbox")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(state, "inbox"))
		if len(entries) != 0 {
			t.Errorf("spill files left: %v", entries)
		}
	}
}
