package main

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/hivetools/hive/internal/hivetest"
)

// The CLI's human output, as a person at a terminal sees it: each command
// line, its exit status, its stdout and its stderr, in
// testdata/cli_human.txtar.
func TestGoldenCLI(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir() // jobs record their working directory
	n := newNormalizer(state, cwd)
	arch := &txtar.Archive{Comment: []byte(`The human output of hive's CLI: each section is one command line, run in
order against one state dir, with its exit status, its stdout and its stderr.
Written by TestGoldenCLI (cmd/hive/golden_cli_test.go); the normalizer of
cmd/hive/golden_test.go replaces what changes from run to run with
placeholders such as <id1>, <dur>, <clock>, <pid>, <state>, <version>. After a change that is meant:

	go test ./cmd/hive/ -run TestGoldenCLI -update
`)}
	step := 0
	// run runs hive args and records it; it returns the raw stdout.
	run := func(isVolatile bool, args ...string) string {
		t.Helper()
		step++
		cmd := hivetest.Command(t, state, args...)
		cmd.Dir = cwd
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("hive %v: %v", args, err)
		}
		norm := n.stable
		if isVolatile {
			norm = n.volatile
		}
		var b strings.Builder
		fmt.Fprintf(&b, "exit %d\n", code)
		for _, s := range []struct{ name, text string }{{"stdout", out.String()}, {"stderr", errb.String()}} {
			if s.text == "" {
				continue
			}
			fmt.Fprintf(&b, "--- %s\n%s", s.name, norm(s.text))
			if !strings.HasSuffix(s.text, "\n") {
				b.WriteString("\n[no newline at the end]\n")
			}
		}
		// The section's name is the command line (ids in it normalized).
		line := make([]string, len(args))
		for i, a := range args {
			line[i] = shellQuote(a)
		}
		arch.Files = append(arch.Files, txtar.File{Name: fmt.Sprintf("%02d hive %s", step, n.volatile(strings.Join(line, " "))), Data: []byte(b.String())})
		return out.String()
	}

	run(volatile, "version") // before any daemon
	nap := strings.TrimSpace(run(volatile, "run", "--name", "nap", "--", "sleep", "600"))
	run(volatile, "run", "--name", "nap", "--", "sleep", "600") // the name is taken
	sh := strings.TrimSpace(run(volatile, "run", "--", "sh", "-c", "echo out; echo err >&2; exit 3"))
	run(volatile, "wait", sh)
	run(volatile, "ps")
	run(volatile, "ps", "-a")
	run(volatile, "inspect", sh)
	run(volatile, "kill", "nosuchjob")
	run(volatile, "todo", "upsert", "--subsystem", "ci", "--key", "build-42", "--summary", "build 42 failed")
	run(volatile, "todo", "ls")
	run(volatile, "wake", "--from", "ci", "build 42 failed: see the log")
	run(volatile, "inbox", "ls")
	run(volatile, "version") // the daemon and the holder it started
	run(volatile, "kill", nap)
	run(volatile, "wait", nap)
	for _, c := range []string{"run", "ps", "kill", "inspect", "todo"} {
		run(stable, c, "--help")
	}
	checkGolden(t, "cli_human.txtar", arch)
}

// shellQuote quotes a word as a shell would need it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,@%+-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
