//go:build unix

package pty

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// sendReady is SendReady with the test's bound; it fails the test on an
// error.
func sendReady(t *testing.T, s *Session, input string) ReadResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	r, err := s.SendReady(ctx, input)
	if err != nil {
		t.Fatalf("SendReady(%q): %v; output:\n%s\nscreen:\n%s", input, err, r.Data, s.Screen().Text)
	}
	return r
}

// TestSendReady: SendReady returns with the whole answer once the program
// waits for input again, however long the program takes and whatever
// quiet there is in between; never with just the echo.
func TestSendReady(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo up-$((1+1))\n", `up-2\n`+prompt)
	for _, c := range []struct {
		name, input string
		want        string // a regexp the whole answer must match
		linuxOnly   bool   // the screen alone cannot tell (no prompt)
	}{
		{name: "builtin", input: "echo hi-$((6*7))\n", want: `\Aecho hi-\$\(\(6\*7\)\)\nhi-42\n` + prompt + `\z`},
		// Quiet far longer than any quiet window, then the answer.
		{name: "sleep", input: "sleep 0.4; echo woke-$((1+1))\n", want: `\nwoke-2\n` + prompt + `\z`},
		// Streaming: not cut off at a chunk, but at the prompt after the
		// end (24 KB: many reads of the terminal; 20000 lines took more
		// than testTimeout under -race on a loaded machine).
		{name: "stream", input: "seq 1 5000\n", want: `\n4999\n5000\n` + prompt + `\z`},
		// A program reading the terminal (cat) waits for input, no prompt.
		{name: "read tty", input: "cat\n", want: `\Acat\n\z`, linuxOnly: true},
		{name: "cat echoes", input: "line\n", want: `\Aline\nline\n\z`, linuxOnly: true},
		// Half a line: cat does not wake for it; the quiet ends the wait.
		{name: "half line", input: "ha", want: `\Aha\z`},
		{name: "rest", input: "lf\n", want: `\Alf\nhalf\n\z`, linuxOnly: true},
		{name: "eof", input: "\x04", want: `\A` + prompt + `\z`},
		// Another process of the group reads: a child of the leader (a
		// pager), or any once the leader is gone.
		{name: "child reads", input: "bash -c 'cat; true'\n", want: `\Abash -c 'cat; true'\n\z`, linuxOnly: true},
		{name: "child eof", input: "\x04", want: `\A` + prompt + `\z`},
		{name: "leader gone", input: "true | cat /dev/tty\n", want: `\Atrue \| cat /dev/tty\n\z`, linuxOnly: true},
		{name: "member eof", input: "\x04", want: `\A` + prompt + `\z`},
		// Reading a pipe is not waiting for the terminal: it is waited for.
		{name: "read pipe", input: "read -r -t 0.4 x < <(sleep 5); echo after-$((2+2))\n", want: `\nafter-4\n` + prompt + `\z`, linuxOnly: true},
		// read -p: a prompt of the program's own.
		{name: "read prompt", input: "read -r -p 'name? ' v\n", want: `\nname\? \z`},
		{name: "answer", input: "bob\n", want: `\Abob\n` + prompt + `\z`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.linuxOnly && runtime.GOOS != "linux" {
				t.Skip("needs /proc")
			}
			r := sendReady(t, s, c.input)
			if !regexp.MustCompile(c.want).MatchString(r.Data) {
				t.Errorf("SendReady(%q) = %q, want a match of %s", c.input, r.Data[max(0, len(r.Data)-200):], c.want)
			}
			if !r.Running || r.Next != s.stream.Stats().Total {
				t.Errorf("result %+v: want running, Next at the end of the output (%d)", r, s.stream.Stats().Total)
			}
		})
	}
	if r := sendReady(t, s, "exit\n"); r.Running || r.ExitCode == nil || *r.ExitCode != 0 || r.Data != "exit\nexit\n" {
		t.Errorf("after exit: %+v, want exited with 0, the output %q", r, "exit\nexit\n")
	}
}

// TestSendReadyREPL: a python3 REPL's answer and its next prompt, with
// the continuation prompt and input() in between.
func TestSendReadyREPL(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{Cmd: "python3 -q"})
	for deadline := time.After(testTimeout); ; {
		changed := s.stream.Changed()
		if r, _ := s.Read(0, false, 0); r.Data == ">>> " {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no prompt; screen:\n%s", s.Screen().Text)
		}
	}
	for _, c := range []struct{ input, want string }{
		{"1+1\n", "1+1\n2\n>>> "},
		{"import time; time.sleep(0.3); print('slept')\n", "import time; time.sleep(0.3); print('slept')\nslept\n>>> "},
		{"for i in range(2):\n", "for i in range(2):\n... "},
		{"  print(i)\n\n", "  print(i)\n... \n0\n1\n>>> "},
		{"input('who? ')\n", "input('who? ')\nwho? "},
		{"me\n", "me\n'me'\n>>> "},
	} {
		if r := sendReady(t, s, c.input); r.Data != c.want {
			t.Errorf("SendReady(%q) = %q, want %q", c.input, r.Data, c.want)
		}
	}
}

func TestPromptRE(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{"bash-5.2$ ", true}, {"root@box:/# ", true}, {">>> ", true}, {"... ", true},
		{"(Pdb) ", true}, {"In [3]: ", true}, {"sqlite> ", true}, {"Password:", true}, {"% ", true},
		{"❯ ", true}, {"name? ", true},
		{">>> 1+1", false}, {"bash-5.2$ echo hi", false}, {"loading 45%...x", false}, {"100", false},
	} {
		if got := promptRE.MatchString(c.line); got != c.want {
			t.Errorf("promptRE(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

// TestPromptAtCursor: the screen tells a prompt from a line being typed.
func TestPromptAtCursor(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo up-$((1+1))\n", `up-2\n`+prompt)
	if !s.promptAtCursor() {
		t.Errorf("promptAtCursor = false at bash's prompt; screen:\n%s", s.Screen().Text)
	}
	// Typed but not entered: the echo stands after the prompt.
	sendWait(t, s, "echo typed", `typed`)
	if s.promptAtCursor() {
		t.Errorf("promptAtCursor = true after typing; screen:\n%s", s.Screen().Text)
	}
	// The cursor moved back into the line: text after it.
	col := s.Screen().CursorCol
	if err := s.Send("\x1b[D\x1b[D"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.After(testTimeout); ; {
		changed := s.stream.Changed()
		if s.Screen().CursorCol == col-2 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the cursor did not move back; screen %+v", s.Screen())
		}
	}
	if s.promptAtCursor() {
		t.Errorf("promptAtCursor = true with text after the cursor; screen:\n%s", strings.TrimSpace(s.Screen().Text))
	}
}

// TestSendReadyBounded: a busy program is waited for until ctx ends; the
// answer so far comes with ctx's error.
func TestSendReadyBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the quiet ends the wait")
	}
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo up-$((1+1))\n", `up-2\n`+prompt)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := s.SendReady(ctx, "sleep 30\n")
	if !errors.Is(err, context.DeadlineExceeded) || r.Data != "sleep 30\n" || !r.Running {
		t.Errorf("SendReady(sleep 30) = %+v, %v; want the echo and the deadline", r, err)
	}
	if p := s.probe(); p.state != fgBusy {
		t.Errorf("probe while sleep 30 runs = %+v, want busy", p)
	}
}

// TestSendReadyByScreen: where the process cannot be seen (no /proc, or
// not allowed), a prompt at the cursor after the echo tells; without one,
// the quiet ends the wait.
func TestSendReadyByScreen(t *testing.T) {
	lookAtGroup = func(pg int, _ string) fgProbe { return fgProbe{pid: pg} }
	t.Cleanup(func() { lookAtGroup = probeGroup })
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo up-$((1+1))\n", `up-2\n`+prompt)
	if r := sendReady(t, s, "echo hi-$((6*7))\n"); !regexp.MustCompile(`\Aecho hi-\$\(\(6\*7\)\)\nhi-42\n` + prompt + `\z`).MatchString(r.Data) {
		t.Errorf("echo: %q, want the answer and the prompt", r.Data)
	}
	// No prompt: the quiet ends the wait, before the answer.
	if r := sendReady(t, s, "sleep 1; echo late\n"); r.Data != "sleep 1; echo late\n" {
		t.Errorf("sleep: %q, want the echo only", r.Data)
	}
	sendWait(t, s, "", `late\n`+prompt)
}

// TestSendReadyExit: once the shell exits, no input is wanted: SendReady
// returns, though a job it left still holds the terminal.
func TestSendReadyExit(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo up-$((1+1))\n", `up-2\n`+prompt)
	r := sendReady(t, s, "(sleep 2; echo bg-$((1+1))) & exit\n")
	if r.Running || strings.Contains(r.Data, "bg-2") {
		t.Errorf("SendReady(... & exit) = %+v, want the shell gone and the job's output not waited for", r)
	}
}

// The first input of a session sent right after Open reaches the shell
// after it has set up its terminal: its echo follows the first prompt
// (the terminal echoed it before the prompt when it came first).
func TestFirstInputAfterPrompt(t *testing.T) {
	m := newManager(t, Options{})
	for i := range 5 {
		s := open(t, m, OpenOptions{})
		r := sendWait(t, s, "echo first-$((2+3))\n", `(?m)^first-5`)
		all, err := s.Read(0, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		at := strings.Index(all.Data, "echo first-")
		if p := regexp.MustCompile(`bash-[0-9.]+[#$] `).FindStringIndex(all.Data); p == nil || at < 0 || p[1] > at {
			t.Fatalf("session %d: the input's echo is not after the first prompt: %q (since the send: %q)", i, all.Data, r.Data)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
