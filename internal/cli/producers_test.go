package cli

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/daemon"
)

// inProcessDaemon runs a daemon on a new state dir until the test ends.
func inProcessDaemon(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hive-cli-")
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{StateDir: dir, Logger: slog.New(slog.DiscardHandler), Ready: func() { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
		os.RemoveAll(dir)
	})
	return dir
}

// cliRun runs a hive command line in-process: words (the subcommand), then
// --state-dir, then args.
func cliRun(dir, stdin string, words string, args ...string) (stdout, stderr string, err error) {
	var out, errb strings.Builder
	argv := append(append(strings.Fields(words), "--state-dir", dir), args...)
	// The daemon runs: wake and todo upsert never start one (Exe is unused).
	err = Run(context.Background(), Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Exe: "/nonexistent/hive"}, argv)
	return out.String(), errb.String(), err
}

// The producer commands' human output, their JSON, and the usage errors
// that name the flag and the rule (before any daemon is asked).
func TestProducerCommandLines(t *testing.T) {
	dir := inProcessDaemon(t)
	for _, tt := range []struct {
		words, stdin string
		args         []string
		want         string
	}{
		{"wake", "", []string{"--from", "ci", "build 42 failed"}, "message 1 queued\n"},
		{"wake", "line one\n<two> & three\n", []string{"--from", "chat:alice@example.org"}, "message 2 queued\n"},
		{"wake", "dash", []string{"-", "--from", "ci", "--json"}, `{"message_id":3}` + "\n"},
		{"inbox next", "", nil, "message 1 from ci at "},
		{"inbox ls", "", nil, "2 undelivered\nID  FROM                    AT"},
		{"inbox ack", "", []string{"1"}, "message 1 acked\n"},
		{"inbox next", "", []string{"--json"}, `{"message":{"id":2,"from":"chat:alice@example.org","at":`},
		{"inbox ack", "", []string{"2", "--json"}, `{"acked":2}` + "\n"},
		{"inbox next", "", []string{"--json"}, `"body":"dash"}}`},
		{"inbox ack", "", []string{"3"}, "message 3 acked\n"},
		{"inbox next", "", nil, "no message\n"},
		{"inbox next", "", []string{"--wait", "--timeout", "0.1", "--json"}, `{"empty":true}` + "\n"},
		{"inbox ls", "", []string{"--json"}, `{"messages":[],"undelivered":0}` + "\n"},
		{"todo upsert", "", []string{"--subsystem", "ci", "--key", "build-42", "--summary", "build 42 failed"}, "todo 1 (ci/build-42)\n"},
		{"todo ls", "", nil, "ID  SUBSYSTEM  KEY       UPDATED"},
		{"todo ls", "", []string{"--json"}, `{"todos":[{"id":1,"subsystem":"ci","key":"build-42","summary":"build 42 failed",`},
		{"inbox next", "", []string{"--wait", "--json"}, `"from":"loose-ends","at":`},
		{"todo clear", "", []string{"--subsystem", "ci", "--key", "build-42"}, "cleared ci/build-42\n"},
		{"todo clear", "", []string{"--subsystem", "ci", "--key", "build-42"}, "no todo ci/build-42 (nothing to clear)\n"},
		{"todo clear", "", []string{"--subsystem", "ci", "--key", "build-42", "--json"}, `{"cleared":false}` + "\n"},
		{"todo ls", "", nil, "no open todos\n"},
		{"turn", "", []string{"thinking", "--context-usage", "0.4"}, "{\"compact_pending\":false}\n"},
		{"turn", "", []string{"idle", "--json"}, `{"compact_pending":false}` + "\n"},
	} {
		out, errs, err := cliRun(dir, tt.stdin, tt.words, tt.args...)
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("hive %s %v: %v %q %q, want %q", tt.words, tt.args, err, out, errs, tt.want)
		}
		if slices.Contains(tt.args, "--json") {
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("hive %s %v: not one JSON object: %q", tt.words, tt.args, out)
			}
		}
	}
	for _, tt := range []struct {
		words, stdin string
		args         []string
		want         string
	}{
		{"wake", "", []string{"x"}, `--from "": must be 1-64 characters`},
		{"wake", "", []string{"--from", "a b", "x"}, `--from "a b": must be 1-64 characters`},
		{"wake", "", []string{"--from", "ci"}, "body: must not be empty"},
		{"wake", "", []string{"--from", "ci", "a", "b"}, "give the body as one argument"},
		{"wake", strings.Repeat("x", 1<<20+1), []string{"--from", "ci"}, "body: more than 1048576 bytes on stdin, at most 1048576"},
		{"todo upsert", "", []string{"--key", "k", "--summary", "s"}, "--subsystem: must not be empty"},
		{"todo upsert", "", []string{"--subsystem", "s", "--summary", "s"}, "--key: must not be empty"},
		{"todo upsert", "", []string{"--subsystem", "s", "--key", "k"}, "--summary: must not be empty"},
		{"todo upsert", "", []string{"--subsystem", "s", "--key", "k", "--summary", "x", "extra"}, `unexpected argument "extra"`},
		{"todo clear", "", []string{"--subsystem", "s"}, "--key: must not be empty"},
		{"todo frob", "", nil, `hive todo "frob": want upsert, clear or ls`},
		{"inbox ack", "", []string{"x"}, `ID "x": must be a message id`},
		{"inbox ack", "", []string{"0"}, `ID "0": must be a message id`},
		{"inbox ack", "", nil, "hive inbox ack ID"},
		{"inbox next", "", []string{"--timeout", "5"}, "--timeout: only with --wait"},
		{"inbox next", "", []string{"--wait", "--timeout", "-1"}, "--timeout -1: must be 0..1e8"},
		{"inbox frob", "", nil, `hive inbox "frob": want ls, next or ack`},
		{"turn", "", []string{"sleeping"}, `state "sleeping": must be idle, thinking or compacting`},
		{"turn", "", []string{"idle", "--context-usage", "1.5"}, "--context-usage 1.5: must be 0..1"},
		{"turn", "", []string{"idle", "--context-usage", "lots"}, `invalid value "lots" for flag -context-usage: not a number`},
		{"turn", "", nil, "hive turn idle|thinking|compacting"},
		{"loop", "", nil, "hive loop [--timeout S] -- AGENT-COMMAND..."},
		{"loop", "", []string{"--", "/nonexistent/agent"}, `AGENT-COMMAND "/nonexistent/agent"`},
		{"loop", "", []string{"--timeout", "-1", "--", "true"}, "--timeout -1: must be 0..1e8"},
	} {
		_, _, err := cliRun(dir, tt.stdin, tt.words, tt.args...)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("hive %s %.40v: %v, want a usage error with %q", tt.words, tt.args, err, tt.want)
		}
	}
	// Nothing of the refused ones reached the inbox.
	if out, _, err := cliRun(dir, "", "inbox ls", "--json"); err != nil || out != `{"messages":[],"undelivered":0}`+"\n" {
		t.Errorf("inbox after the refused ones: %v %q", err, out)
	}
}
