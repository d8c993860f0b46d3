package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

type ptyOut struct {
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	Matched    bool   `json:"matched"`
	Running    bool   `json:"running"`
	ExitCode   *int   `json:"exit_code"`
	Screen     string `json:"screen"`
	CursorRow  int    `json:"cursor_row"`
	CursorCol  int    `json:"cursor_col"`
}

type ptyInfo struct {
	SessionID string `json:"session_id"`
	Pid       int    `json:"pid"`
	Cols      int    `json:"cols"`
	Rows      int    `json:"rows"`
	Running   bool   `json:"running"`
	ExitCode  *int   `json:"exit_code"`
}

// ptyCall calls a pty tool into a fresh result.
func ptyCall(t *testing.T, s *hivetest.Session, tool string, args map[string]any) ptyOut {
	t.Helper()
	var out ptyOut
	s.MustCall(tool, args, &out)
	return out
}

// foreground waits until a process running argv is the foreground process
// group of its terminal, so a Ctrl-C reaches it.
func foreground(t *testing.T, cmdline string) int {
	t.Helper()
	var fg int
	hivetest.Eventually(t, 10*time.Second, fmt.Sprintf("%q to be the terminal's foreground process", cmdline), func() error {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil || strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") != cmdline {
				continue
			}
			st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			f := strings.Fields(string(st)[strings.LastIndexByte(string(st), ')')+2:])
			if len(f) > 5 && f[2] == f[5] { // pgrp == tpgid
				fg = pid
				return nil
			}
		}
		return fmt.Errorf("%q is not the terminal's foreground process", cmdline)
	})
	return fg
}

func TestPTYShell(t *testing.T) {
	state := hivetest.StateDir(t)
	cwd := t.TempDir()
	s := hivetest.Connect(t, state, cwd)
	var info ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"name": "sh1"}, &info)
	if !strings.HasPrefix(info.SessionID, "pty_") || info.Cols != 120 || info.Rows != 40 || info.Pid == 0 {
		t.Fatalf("open: %+v", info)
	}
	var out ptyOut
	out = ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": "sh1", "input": "echo v=$((6*7)); pwd\n", "wait_for": "v=42\\s+" + regexp.QuoteMeta(cwd)})
	if !out.Matched {
		t.Fatalf("no match: %+v", out)
	}
	// Ctrl-C interrupts the foreground program; the shell survives.
	out = ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "sleep 300 & echo bg=$!; sleep 601\n", "wait_for": "bg=\\d+"})
	bg, _ := strconv.Atoi(regexp.MustCompile(`bg=(\d+)`).FindStringSubmatch(out.Data)[1])
	fg := foreground(t, "sleep 601")
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "keys": []string{"C-c"}, "wait_ms": 0})
	out = ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "echo alive-$?\n", "wait_for": "alive-130"})
	if !out.Matched || !out.Running || hivetest.Alive(fg) {
		t.Fatalf("after Ctrl-C: %+v", out)
	}
	// Screen rendering and resize.
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "clear; printf '\\033[5;10HXY'; sleep 0.2; echo; echo drawn\n", "wait_for": "(?m)^drawn"})
	out = ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": info.SessionID, "screen": true})
	lines := strings.Split(out.Screen, "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[4], strings.Repeat(" ", 9)+"XY") {
		var dbg ptyOut
		s.MustCall("terminal_pty_read", map[string]any{"session_id": info.SessionID, "raw": true}, &dbg)
		t.Errorf("screen row 5: %q\nraw: %q", out.Screen, dbg.Data)
	}
	s.MustCall("terminal_pty_resize", map[string]any{"session_id": info.SessionID, "cols": 100, "rows": 30}, &info)
	out = ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "stty size\n", "wait_for": "30 100"})
	if !out.Matched {
		t.Errorf("stty size after resize: %q", out.Data)
	}
	// Raw read keeps escapes; the default strips them.
	var raw, plain ptyOut
	s.MustCall("terminal_pty_read", map[string]any{"session_id": info.SessionID, "raw": true}, &raw)
	s.MustCall("terminal_pty_read", map[string]any{"session_id": info.SessionID}, &plain)
	if !strings.Contains(raw.Data, "\x1b[") || strings.Contains(plain.Data, "\x1b[") {
		t.Errorf("raw has escapes: %v, plain has none: %v", strings.Contains(raw.Data, "\x1b["), !strings.Contains(plain.Data, "\x1b["))
	}
	var list struct {
		Sessions []ptyInfo `json:"sessions"`
	}
	s.MustCall("terminal_pty_list", nil, &list)
	if len(list.Sessions) != 1 {
		t.Errorf("list: %+v", list)
	}
	s.MustCall("terminal_pty_close", map[string]any{"session_id": "sh1"}, &info)
	if hivetest.Alive(bg) || hivetest.Alive(info.Pid) {
		t.Errorf("close left processes: bg %d alive=%v, shell alive=%v", bg, hivetest.Alive(bg), hivetest.Alive(info.Pid))
	}
	if text, isErr := s.Call("terminal_pty_send", map[string]any{"session_id": "nope", "input": "x"}, nil); !isErr || !strings.Contains(text, "session_id") {
		t.Errorf("unknown session: %q", text)
	}
}

// sigIgnored reports whether process pid ignores signal sig.
func sigIgnored(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^SigIgn:\s*([0-9a-f]+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no SigIgn in /proc/%d/status", pid)
	}
	mask, _ := strconv.ParseUint(string(m[1]), 16, 64)
	return mask&(1<<(sig-1)) != 0
}

// A daemon that inherited an ignored SIGHUP (started by nohup, or by any
// parent that ignored it, as a long-lived daemon often is) used to pass
// it on: a session's program that leaves SIGHUP alone (cat, python3 run
// as the session's command) outlived terminal_pty_close's hangup, was
// killed after the 1 s grace and read exit 137. Now the hangup ends it:
// exit code 129 (128+SIGHUP), after the daemon has served other work.
func TestPTYCloseHangupIgnoredDaemon(t *testing.T) {
	state := hivetest.StateDir(t)
	bin := hivetest.Bin(t)
	d := exec.Command("bash", "-c", `trap '' HUP; exec "$0" daemon`, bin.Path)
	d.Env = bin.Environ(state)
	hivetest.StartDaemonCmd(t, state, d)
	if !sigIgnored(t, hivetest.DaemonPid(state), syscall.SIGHUP) {
		t.Fatal("the daemon does not ignore SIGHUP: the test's premise is gone")
	}
	s := hivetest.Connect(t, state, t.TempDir())
	for range 3 {
		s.MustCall("run", map[string]any{"cmd": "true", "wait_seconds": 5}, nil)
		s.MustCall("terminal_exec", map[string]any{"cmd": "seq 1 1000"}, nil)
		var sh ptyInfo
		s.MustCall("terminal_pty_open", nil, &sh)
		ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "echo w-$((1+1))\n", "wait_for": "w-2"})
		s.MustCall("terminal_pty_close", map[string]any{"session_id": sh.SessionID}, nil)
	}
	for _, c := range []struct{ name, cmd, input, want string }{
		{"cat", "cat", "ping\n", "ping\\s+ping"},
		{"shell", "", "echo ok-$((6*7))\n", "ok-42"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var info ptyInfo
			s.MustCall("terminal_pty_open", map[string]any{"cmd": c.cmd}, &info)
			if out := ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": c.input, "wait_for": c.want}); !out.Matched {
				t.Fatalf("send: %+v", out)
			}
			if sigIgnored(t, info.Pid, syscall.SIGHUP) {
				t.Errorf("the session's process %d ignores SIGHUP, inherited from the daemon", info.Pid)
			}
			s.MustCall("terminal_pty_close", map[string]any{"session_id": info.SessionID}, &info)
			if info.Running || info.ExitCode == nil || *info.ExitCode != 129 {
				code := "none"
				if info.ExitCode != nil {
					code = strconv.Itoa(*info.ExitCode)
				}
				t.Errorf("after close: running=%v exit_code=%s, want 129: ended by the hangup, not killed after a grace", info.Running, code)
			}
		})
	}
}

func TestPTYPythonREPL(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	var info ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"cmd": "python3 -q"}, &info)
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "keys": []string{"Enter"}, "wait_for": ">>> "})
	out := ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "6*7\n", "wait_for": "(?m)^42$"})
	if !out.Matched {
		t.Fatalf("python: %q", out.Data)
	}
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": info.SessionID, "input": "exit()\n", "wait_ms": 10000})
	out = ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": info.SessionID})
	if out.Running || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Errorf("after exit(): running=%v exit=%v", out.Running, out.ExitCode)
	}
	s.MustCall("terminal_pty_close", map[string]any{"session_id": info.SessionID}, nil)
}

// terminal_pty_send without wait_ms or wait_for returns once the program
// waits for input again: the whole answer and the next prompt, however
// long it takes or prints, never just the echo or the first chunk.
func TestPTYSendDefaultWaitsForInput(t *testing.T) {
	state := hivetest.StateDir(t)
	s := hivetest.Connect(t, state, t.TempDir())
	prompt := regexp.MustCompile(`\nbash-[0-9.]+[#$] $`)
	var sh ptyInfo
	s.MustCall("terminal_pty_open", nil, &sh)
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "echo re''ady\n", "wait_for": "ready\n"})
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "\n", "wait_for": prompt.String()})

	// Quiet far longer than the old 300 ms default, then the answer.
	out := ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "sleep 0.5; echo late-$((1+1))\n"})
	if !strings.HasSuffix(prompt.ReplaceAllString(out.Data, ""), "\nlate-2") || !prompt.MatchString(out.Data) {
		t.Errorf("sleep then echo: %q, want late-2 and the prompt", out.Data)
	}
	// Streaming: all of it, up to the prompt after the last line, many
	// reads of the terminal later. (The screen emulator takes about
	// 17 µs a line, 10 times that with -race, and CI's two cores run
	// other packages' tests beside: 5000 lines stay well inside the 10 s
	// a default send waits; 30000 did not, once.)
	out = ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": sh.SessionID, "input": "seq 1 5000\n"})
	if !strings.HasSuffix(prompt.ReplaceAllString(out.Data, ""), "\n4999\n5000") || !prompt.MatchString(out.Data) {
		t.Errorf("seq 1 5000: ends %q, want 5000 and the prompt", out.Data[max(0, len(out.Data)-60):])
	}
	if more := ptyCall(t, s, "terminal_pty_read", map[string]any{"session_id": sh.SessionID, "since_offset": out.NextOffset}); more.Data != "" {
		t.Errorf("output after the answer's end: %d bytes", len(more.Data))
	}

	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	var py ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"cmd": "python3 -q"}, &py)
	ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": py.SessionID, "input": "print('rea'+'dy')\n", "wait_for": "ready\n>>> $"})
	for _, c := range []struct{ input, want string }{
		{"1+1\n", "1+1\n2\n>>> "},
		{"import time; time.sleep(0.5); print('up')\n", "import time; time.sleep(0.5); print('up')\nup\n>>> "},
		{"if True:\n", "if True:\n... "},
		{"  6*7\n\n", "  6*7\n... \n42\n>>> "},
	} {
		if out := ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": py.SessionID, "input": c.input}); out.Data != c.want {
			t.Errorf("python %q: %q, want %q", c.input, out.Data, c.want)
		}
	}
}

// A session that ended, closed by the client or left by a daemon killed
// with -9, still answers: terminal_pty_read returns its output from its
// file with a note saying what happened, send and close say it ended.
func TestPTYEndedSession(t *testing.T) {
	state := hivetest.StateDir(t)
	// A daemon that holds its sessions itself: they end with it. (With
	// the holder they outlive it: TestPTYOutlivesTheDaemon.)
	hivetest.StartDaemon(t, state, "--hold-jobs=false")
	s := hivetest.Connect(t, state, t.TempDir())
	var closed, crashed ptyInfo
	s.MustCall("terminal_pty_open", map[string]any{"name": "gone"}, &closed)
	s.MustCall("terminal_pty_open", nil, &crashed)
	for _, id := range []string{closed.SessionID, crashed.SessionID} {
		ptyCall(t, s, "terminal_pty_send", map[string]any{"session_id": id, "input": "echo said-$((40+2))\n", "wait_for": "said-42"})
	}
	s.MustCall("terminal_pty_close", map[string]any{"session_id": "gone"}, nil)

	old := hivetest.DaemonPid(state)
	hivetest.Kill(old)
	hivetest.Eventually(t, 10*time.Second, "the killed daemon to end", hivetest.Gone(old))
	s2 := hivetest.Connect(t, state, t.TempDir())
	for _, c := range []struct {
		id, asked, says string
	}{
		{closed.SessionID, "gone", `^session_id "gone" \(` + closed.SessionID + `\): the session was closed at \d\d:\d\d:\d\d \(exit code \d+\); its output is in /\S+\.pty$`},
		{crashed.SessionID, crashed.SessionID, `^session_id "` + crashed.SessionID + `": the session ended when the daemon stopped \(interrupted at \d\d:\d\d:\d\d\); its output is in /\S+\.pty$`},
	} {
		says := regexp.MustCompile(c.says)
		var out ptyOut
		text := s2.MustCall("terminal_pty_read", map[string]any{"session_id": c.asked}, &out)
		note := text[strings.LastIndexByte(text, '\n')+1:]
		if !strings.Contains(out.Data, "said-42\n") || out.Running || !strings.HasPrefix(note, "[") || !says.MatchString(strings.Trim(note, "[]")) {
			t.Errorf("read of ended %s: %+v\ntext %q\nwant its output and a note matching %s", c.id, out, text, c.says)
		}
		// Offsets are those of the live session: reading on from the end gives nothing new.
		var more ptyOut
		s2.MustCall("terminal_pty_read", map[string]any{"session_id": c.id, "since_offset": out.NextOffset}, &more)
		if more.Data != "" || more.NextOffset != out.NextOffset {
			t.Errorf("read of ended %s from its end: %+v", c.id, more)
		}
		for tool, args := range map[string]map[string]any{
			"terminal_pty_send":  {"session_id": c.asked, "input": "x"},
			"terminal_pty_close": {"session_id": c.asked},
		} {
			text, isErr := s2.Call(tool, args, nil)
			if !isErr || !says.MatchString(text) {
				t.Errorf("%s of ended %s: error %v %q, want one matching %s", tool, c.id, isErr, text, c.says)
			}
		}
	}
	var list struct {
		Sessions []ptyInfo `json:"sessions"`
	}
	s2.MustCall("terminal_pty_list", nil, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("list after the restart: %+v, want no open session", list.Sessions)
	}
}
