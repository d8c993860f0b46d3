package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hivetools/hive/internal/hivetest"
)

// runSplit runs `hive ARGS` on state and returns its exit status, stdout
// and stderr apart.
func runSplit(t *testing.T, state string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := hivetest.Command(t, state, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	return rc(t, cmd.Run()), out.String(), errb.String()
}

// oneLine fails t unless s is exactly one line holding every one of want.
func oneLine(t *testing.T, what, s string, want ...string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("%s: %q, want one line", what, s)
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s: %q, want it to say %q", what, s, w)
		}
	}
}

// A mistyped command or flag gets one line naming it and where the help
// is, and exit status 2; not the whole usage.
func TestUnknownCommandOneLine(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"bogus"}, []string{`unknown command "bogus"`, "hive help"}},
		{[]string{"help", "bogus"}, []string{`unknown command "bogus"`, "hive help"}},
		{[]string{"ps", "--bogus"}, []string{"-bogus", "hive ps -h"}},
		{[]string{"stop", "--grace", "soon"}, []string{`"soon"`, "-grace", "hive stop -h"}},
	} {
		code, out, errs := runSplit(t, state, tc.args...)
		if code != 2 || out != "" {
			t.Errorf("hive %v: exit %d, stdout %q; want 2 and nothing", tc.args, code, out)
		}
		oneLine(t, "hive "+strings.Join(tc.args, " ")+"'s stderr", errs, tc.want...)
	}
}

// With no daemon, a command that needs one says so in one line, with no
// system call's wording, and how to start one.
func TestNoDaemonOneLine(t *testing.T) {
	state := hivetest.StateDir(t)
	for _, args := range [][]string{{"ps"}, {"logs", "abc"}, {"inspect", "abc"}} {
		code, out, errs := runSplit(t, state, args...)
		if code != 1 || out != "" {
			t.Errorf("hive %v: exit %d, stdout %q; want 1 and nothing", args, code, out)
		}
		oneLine(t, "hive "+strings.Join(args, " ")+"'s stderr", errs, "no hive daemon is running", "hive daemon starts one")
		if strings.Contains(errs, "lstat") || strings.Contains(errs, "no such file") {
			t.Errorf("hive %v: %q tells a system call's error", args, errs)
		}
	}
}

// The first input sent right after terminal_pty_open reaches the shell
// once it has set up its terminal: the transcript shows the prompt, then
// the input's echo once, then its output (the terminal echoed the input
// ahead of the prompt, and the shell again after it).
func TestPTYFirstInputAfterPrompt(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	first := regexp.MustCompile(`^bash-[0-9.]+[#$] echo first-\$\(\(2\+3\)\)\nfirst-5\n`)
	for i := range 3 {
		var sh ptyInfo
		s.MustCall("terminal_pty_open", nil, &sh)
		ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "echo first-$((2+3))\n", "wait_for": "(?m)^first-5$"})
		all := ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": sh.SessionID, "since_offset": 0})
		if !first.MatchString(all.Data) {
			t.Errorf("session %d: the transcript %q, want it to start with the prompt, the input once and its output", i, all.Data)
		}
		s.MustCall("terminal_pty_close", map[string]any{"session_id": sh.SessionID}, &sh)
	}
}

// hive restart first checks the settings the new daemon would read (its
// flags and hive.toml, with the daemon's own code): a bad one is refused
// naming file:line: key, and the running daemon stays, jobs and all.
func TestRestartRefusesBadConfig(t *testing.T) {
	state := hivetest.StateDir(t)
	d := hivetest.StartDaemon(t, state, "--max-running", "3")
	if out, err := hivetest.Run(t, state, "run", "--name", "nap", "--", "sleep 600"); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	toml := filepath.Join(state, "hive.toml")
	for _, tc := range []struct{ file, want string }{
		{"grace = \"2s\"\nmax_runing = 1\n", toml + ":2: max_runing: unknown key"},
		{"grace = \"-1s\"\n", "--grace -1s: must be > 0 (set by " + toml + ":1: grace)"},
		{"grace = 3\n", toml + ":1: grace: value 3: want a duration"},
	} {
		if err := os.WriteFile(toml, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runSplit(t, state, "restart")
		if code != 1 || out != "" {
			t.Errorf("restart with %q: exit %d, stdout %q; want 1 and nothing", tc.file, code, out)
		}
		oneLine(t, fmt.Sprintf("restart with %q", tc.file), errs, tc.want, fmt.Sprintf("the daemon (pid %d) keeps running", d.Pid))
		if p := hivetest.DaemonPid(state); p != d.Pid || !hivetest.Alive(d.Pid) {
			t.Fatalf("after the refused restart: daemon %d (alive %v), lock file %d", d.Pid, hivetest.Alive(d.Pid), p)
		}
	}
	var jobs []cliJob
	hiveJSON(t, state, &jobs, "ps")
	if len(jobs) != 1 || jobs[0].Name != "nap" || jobs[0].State != "running" {
		t.Errorf("jobs after the refused restarts: %+v, want nap running", jobs)
	}
	// Fixed, it restarts, with the daemon's flags.
	os.WriteFile(toml, []byte("grace = \"2s\"\n"), 0o600)
	if out, err := hivetest.Run(t, state, "restart"); err != nil || !strings.Contains(out, fmt.Sprintf("pid %d stopped", d.Pid)) {
		t.Fatalf("restart with a good hive.toml: %v %q", err, out)
	}
}

// ps -a lists every job (it stopped at 200, silently); -n N the N newest,
// ended ones too, and says on stderr how many more there are. CREATED is
// an age, as docker ps shows it.
func TestPsAllAndLast(t *testing.T) {
	state := hivetest.StateDir(t)
	const n = 205
	var ids []string
	for i := range n {
		out, err := hivetest.Run(t, state, "run", "--", fmt.Sprintf("exit %d", i%2))
		if err != nil {
			t.Fatalf("run %d: %v %s", i, err, out)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	code, out, errs := runSplit(t, state, "ps", "-a", "-q")
	if got := strings.Fields(out); code != 0 || len(got) != n || errs != "" {
		t.Fatalf("ps -a -q: exit %d, %d ids, stderr %q; want %d ids and nothing on stderr", code, len(got), errs, n)
	}
	code, out, errs = runSplit(t, state, "ps", "-a")
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(rows) != n+1 || errs != "" {
		t.Fatalf("ps -a: exit %d, %d lines, stderr %q; want a header and %d rows", code, len(rows), errs, n)
	}
	if !regexp.MustCompile(`^ID +NAME +STATE +EXIT +CREATED +DURATION +MEM +CPU +CMD$`).MatchString(rows[0]) ||
		!regexp.MustCompile(`^`+ids[n-1]+` +- +\w+ +\S+ +(Less than a second|\d+ seconds?) ago +`).MatchString(rows[1]) {
		t.Errorf("ps -a: header %q, newest row %q; want the newest job first, created seconds ago", rows[0], rows[1])
	}
	code, out, errs = runSplit(t, state, "ps", "-n", "5")
	rows = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(rows) != 6 || !strings.HasPrefix(rows[1], ids[n-1]) || !strings.HasPrefix(rows[5], ids[n-5]) {
		t.Errorf("ps -n 5: exit %d, %q; want a header and the 5 newest jobs", code, out)
	}
	oneLine(t, "ps -n 5's stderr", errs, fmt.Sprintf("%d older job(s) not shown", n-5))
	var jobs []cliJob
	hiveJSON(t, state, &jobs, "ps", "--last", "3")
	if len(jobs) != 3 || jobs[0].ID != ids[n-1] {
		t.Errorf("ps --last 3 --json: %d jobs, want the 3 newest", len(jobs))
	}
	if code, out, errs := runSplit(t, state, "ps", "-n", "-1"); code != 2 || out != "" {
		t.Errorf("ps -n -1: exit %d, stdout %q, stderr %q; want a usage error", code, out, errs)
	}
}

// hive stop counts the PTY shells it ended, as it counts the jobs.
func TestStopCountsShells(t *testing.T) {
	state := hivetest.StateDir(t)
	if out, err := hivetest.Run(t, state, "run", "--", "sleep 600"); err != nil {
		t.Fatalf("run: %v %s", err, out)
	}
	s := hivetest.Connect(t, state, t.TempDir())
	var pids []int
	for range 2 {
		var sh ptyInfo
		s.MustCall("terminal_pty_open", nil, &sh)
		pids = append(pids, sh.Pid)
	}
	daemon := hivetest.DaemonPid(state)
	out, err := hivetest.Run(t, state, "stop", "--grace", "2s")
	if want := fmt.Sprintf("stopped the daemon (pid %d); 1 job(s) were stopped, 2 PTY shell(s) ended\n", daemon); err != nil || out != want {
		t.Fatalf("stop: %v %q, want %q", err, out, want)
	}
	for _, pid := range pids {
		waitGone(t, pid, fmt.Sprintf("the shell %d", pid))
	}
}

// hive dashboard says when the opener could not open a browser (no
// display, no browser: xdg-open exits 3), with what it said; an opener
// that worked adds nothing to the URL.
func TestDashboardSaysWhenNoBrowser(t *testing.T) {
	state := hivetest.StateDir(t)
	startHTTPDaemon(t, state, "127.0.0.1:0")
	bin := t.TempDir()
	got := filepath.Join(t.TempDir(), "opened")
	for _, tc := range []struct {
		script string
		want   []string // in the one line on stderr; none: no stderr
	}{
		{"#!/bin/sh\necho \"xdg-open: no method available for opening '$1'\" >&2\nexit 3\n",
			[]string{"could not open a browser", "xdg-open: exit status 3: xdg-open: no method available for opening", "open the URL above"}},
		{"#!/bin/sh\necho \"$1\" > " + got + "\n", nil},
	} {
		if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(tc.script), 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := hivetest.Command(t, state, "dashboard")
		cmd.Env = append(cmd.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "/login?code=") {
			t.Fatalf("dashboard: %v, stdout %q, stderr %q", err, out.String(), errb.String())
		}
		if tc.want == nil {
			b, _ := os.ReadFile(got)
			if errb.Len() != 0 || string(b) != out.String() {
				t.Errorf("dashboard with a working opener: stderr %q, the opener got %q; want nothing and the URL %q", errb.String(), b, out.String())
			}
			continue
		}
		oneLine(t, "dashboard with a failing opener's stderr", errb.String(), tc.want...)
	}
}

// The README begins with the two commands a newcomer runs (hive on its
// defaults, the tests), then says that the first go run compiles for
// minutes and gives the build-once path, with ~/.local/bin on PATH.
func TestReadmeStart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatchIndex(string(b), 2)
	if len(blocks) != 2 {
		t.Fatalf("README: %d sh blocks, want two at least", len(blocks))
	}
	first := string(b[blocks[0][2]:blocks[0][3]])
	if !regexp.MustCompile(`^go run \./cmd/hive mcp +#[^\n]*\ngo test \./\.\.\. +#[^\n]*\n$`).MatchString(first) {
		t.Errorf("README's first commands: %q, want go run ./cmd/hive mcp and go test ./...", first)
	}
	note := string(b[blocks[0][1]:blocks[1][1]])
	for _, want := range []string{"first `go run`", "minutes", "go build -o ~/.local/bin/hive ./cmd/hive", `export PATH="$HOME/.local/bin:$PATH"`} {
		if !strings.Contains(note, want) {
			t.Errorf("README's note after the first commands: %q, want it to say %q", note, want)
		}
	}
	if strings.Count(string(b[:blocks[0][0]]), "```") != 0 {
		t.Error("README: a code block before the first commands")
	}
}
