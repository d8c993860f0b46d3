package pty

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestCloseKillsSession starts background jobs that a hangup alone would
// not stop, closes the session and checks that every one is gone.
func TestCloseKillsSession(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	jobs := []struct{ key, cmd string }{
		{"P1", "sleep 3600 & echo P1=$!"},
		{"P2", "nohup sleep 3601 >/dev/null 2>&1 & echo P2=$!"},
		{"P3", "sleep 3602 & disown; echo P3=$!"},
		{"P4", "(trap '' HUP; exec sleep 3603) & echo P4=$!"},
	}
	var pids []int
	for _, j := range jobs {
		r := sendWait(t, s, j.cmd+"\n", j.key+`=\d+`)
		pids = append(pids, pidFrom(t, r.Data, j.key))
	}
	// A foreground job too: it holds the terminal when Close comes.
	r := sendWait(t, s, "bash -c 'echo FG=$$; exec sleep 3604'\n", `FG=\d+`)
	pids = append(pids, pidFrom(t, r.Data, "FG"), s.Info().Pid)
	for _, pid := range pids {
		if processGone(pid) {
			t.Fatalf("pid %d gone before Close", pid)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, pid := range pids {
		if !processGone(pid) {
			t.Errorf("process %d (%d) still runs after Close", i, pid)
		}
	}
	info := s.Info()
	if info.Running || info.ExitCode == nil {
		t.Errorf("after Close info = %+v, want stopped with an exit code", info)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestManagerCloseEndsAll closes a manager with several live sessions.
// It also checks that file descriptors return to their baseline.
func TestManagerCloseEndsAll(t *testing.T) {
	dir := t.TempDir()
	fds := openFDs(t)
	m := NewManager(Options{Dir: dir})
	var pids []int
	for i := range 3 {
		s := open(t, m, OpenOptions{Name: fmt.Sprintf("s-%d", i)})
		r := sendWait(t, s, "sleep 3600 & echo BG=$!\n", `BG=\d+`)
		pids = append(pids, s.Info().Pid, pidFrom(t, r.Data, "BG"))
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Manager.Close: %v", err)
	}
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("pid %d still runs after Manager.Close", pid)
		}
	}
	if len(m.List()) != 0 {
		t.Errorf("List after Close = %+v", m.List())
	}
	if _, err := m.Open(OpenOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Manager.Close = %v, want ErrClosed", err)
	}
	if n := openFDs(t); n != fds {
		t.Errorf("%d open fds after Manager.Close, %d before", n, fds)
	}
}

// TestCloseAfterExit: the process exited on its own and left a background
// job holding the terminal; Close still ends it and the output.
func TestCloseAfterExit(t *testing.T) {
	m := newManager(t, Options{})
	// The kernel hangs up the foreground group when the leader exits: the
	// job ignores SIGHUP (inherited from the shell) to outlive it.
	s := open(t, m, OpenOptions{Cmd: "trap '' HUP; sleep 3600 & echo BG=$!"})
	waitExited(t, s)
	var out string
	for deadline := time.After(testTimeout); ; {
		changed := s.stream.Changed()
		r, _ := s.Read(0, false, 0)
		if out = r.Data; strings.Contains(out, "\n") {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no output; got %q", out)
		}
	}
	pid := pidFrom(t, out, "BG")
	if processGone(pid) {
		t.Fatalf("background job %d gone before Close", pid)
	}
	if r, _ := s.Read(0, false, 0); r.EOF {
		t.Errorf("output ended while the job holds the terminal")
	}
	s.Close()
	if !processGone(pid) {
		t.Errorf("background job %d still runs after Close", pid)
	}
	if r, _ := s.Read(0, false, 0); !r.EOF || r.Data != out {
		t.Errorf("after Close Read = %+v, want EOF with %q", r, out)
	}
}

// TestCloseHangupIgnored: a program that ignores SIGHUP is killed at once
// by Close, without the grace a hangup gets: hangupIgnored tells it from a
// shell, which catches SIGHUP and exits on it.
func TestCloseHangupIgnored(t *testing.T) {
	m := newManager(t, Options{})
	sh := open(t, m, OpenOptions{})
	sendWait(t, sh, "echo up-$((1+1))\n", `up-2`)
	if hangupIgnored(sh.Info().Pid) {
		t.Errorf("hangupIgnored(shell) = true, want false: bash exits on SIGHUP")
	}
	deaf := open(t, m, OpenOptions{Cmd: "trap '' HUP; echo deaf; exec sleep 3600"})
	for deadline := time.After(testTimeout); ; {
		changed := deaf.stream.Changed()
		if r, _ := deaf.Read(0, false, 0); strings.Contains(r.Data, "deaf") {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no output")
		}
	}
	pid := deaf.Info().Pid
	if !hangupIgnored(pid) {
		t.Fatalf("hangupIgnored(%d) = false for a process with trap '' HUP", pid)
	}
	for _, c := range []struct {
		s    *Session
		want int
	}{{sh, 128 + 1}, {deaf, 128 + 9}} {
		if err := c.s.Close(); err != nil {
			t.Fatal(err)
		}
		if info := c.s.Info(); info.ExitCode == nil || *info.ExitCode != c.want || !processGone(info.Pid) {
			t.Errorf("%s after Close: exit code %v, gone %v; want exit code %d and the process gone", c.s.cmdText, fmtCode(info.ExitCode), processGone(info.Pid), c.want)
		}
	}
}

func fmtCode(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// TestCloseRepeatsHangup: a process that survives the first SIGHUP gets
// another one (as bash needs when the hangup comes while it finishes a
// command), so it ends by hangup, not by the SIGKILL after the grace.
// This one takes two: the first only resets its trap.
func TestCloseRepeatsHangup(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{Cmd: `trap "trap - HUP" HUP; echo armed; while :; do read -r -t 0.05 x; done`})
	for deadline := time.After(testTimeout); ; {
		changed := s.stream.Changed()
		if r, _ := s.Read(0, false, 0); strings.Contains(r.Data, "armed") {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no output")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.ExitCode == nil || *info.ExitCode != 128+1 {
		t.Errorf("exit code %s after Close, want 129: ended by a repeated SIGHUP", fmtCode(info.ExitCode))
	}
}
