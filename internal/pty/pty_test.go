//go:build unix

package pty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/limits"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// prompt matches bash's default prompt at the end of the output.
const prompt = `bash-[0-9.]+[#$] $`

// testTimeout bounds each wait in a test; it only matters when a test fails.
const testTimeout = 15 * time.Second

func newManager(t *testing.T, o Options) *Manager {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	m := NewManager(o)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Manager.Close: %v", err)
		}
	})
	return m
}

func open(t *testing.T, m *Manager, o OpenOptions) *Session {
	t.Helper()
	s, err := m.Open(o)
	if err != nil {
		t.Fatalf("Open(%+v): %v", o, err)
	}
	return s
}

// sendWait sends input and waits until pattern matches the new output.
func sendWait(t *testing.T, s *Session, input, pattern string) ReadResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	r, err := s.SendWait(ctx, input, 0, regexp.MustCompile(pattern))
	if err != nil || !r.Matched {
		t.Fatalf("SendWait(%q) waiting for %q: matched=%v err=%v; output:\n%s\nscreen:\n%s",
			input, pattern, r.Matched, err, r.Data, s.Screen().Text)
	}
	return r
}

// pidFrom extracts the number after "KEY=" in text.
func pidFrom(t *testing.T, text, key string) int {
	t.Helper()
	m := regexp.MustCompile(key + `=(\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s=PID in %q", key, text)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

func waitExited(t *testing.T, s *Session) {
	t.Helper()
	select {
	case <-s.Exited():
	case <-time.After(testTimeout):
		t.Fatalf("session %s did not exit; screen:\n%s", s.ID(), s.Screen().Text)
	}
}

func TestShellKeepsState(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})

	r := sendWait(t, s, "echo hello-$((6*7))\n", `hello-42`)
	if !strings.Contains(r.Data, "hello-42") {
		t.Errorf("Data = %q, want hello-42 in it", r.Data)
	}
	if r.Next <= r.Offset || !r.Running || r.ExitCode != nil {
		t.Errorf("result = %+v, want Next > Offset, running, no exit code", r)
	}

	dir := t.TempDir()
	sendWait(t, s, "cd '"+dir+"' && echo cd-$((1+1))\n", `cd-2`)
	r = sendWait(t, s, "pwd\n", `(?m)^`+regexp.QuoteMeta(dir)+`$`)
	if strings.Contains(r.Data, "\r") || strings.Contains(r.Data, "\x1b") {
		t.Errorf("stripped Data has \\r or ESC: %q", r.Data)
	}
}

func TestCtrlCInterruptsForegroundOnly(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})

	// The child prints its pid, then becomes sleep in the foreground.
	r := sendWait(t, s, "bash -c 'echo SLEEP=$$; exec sleep 30'\n", `SLEEP=\d+`)
	pid := pidFrom(t, r.Data, "SLEEP")
	if err := s.Send("\x03"); err != nil {
		t.Fatalf("Send(Ctrl-C): %v", err)
	}
	sendWait(t, s, "echo alive rc=$?\n", `alive rc=130`)
	if !processGone(pid) {
		t.Errorf("sleep (pid %d) still runs after Ctrl-C", pid)
	}
	if info := s.Info(); !info.Running {
		t.Errorf("shell not running after Ctrl-C: %+v", info)
	}
}

func TestPythonREPL(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{Cmd: "python3 -q", Name: "py"})

	sendWait(t, s, "1+41\n", `(?m)^42$`)
	if err := s.Send("exit()\n"); err != nil {
		t.Fatalf("Send(exit()): %v", err)
	}
	waitExited(t, s)
	info := s.Info()
	if info.Running || info.ExitCode == nil || *info.ExitCode != 0 {
		t.Fatalf("after exit(): running=%v exit=%v, want stopped with 0", info.Running, info.ExitCode)
	}
	if err := s.Send("1\n"); !errors.Is(err, ErrExited) {
		t.Errorf("Send after exit = %v, want ErrExited", err)
	}
	// The session stays listed until closed.
	if got, err := m.Get("py"); err != nil || got != s {
		t.Errorf("Get(py) after exit = %v, %v", got, err)
	}
}

func TestExitCodeOfSignal(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{Cmd: "kill -TERM $$"})
	waitExited(t, s)
	if code := s.Info().ExitCode; code == nil || *code != 128+15 {
		t.Errorf("exit code = %v, want 143", code)
	}
}

func TestScreen(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{Cols: 80, Rows: 24})

	// Clear, put XY at row 5 col 10 (1-based), then wait in read so the
	// cursor stays right after XY. \130\131 keeps "XY" out of the echo.
	sendWait(t, s, `printf '\033[2J\033[5;10H\130\131'; read -r x`+"\n", `XY`)
	scr := s.Screen()
	lines := strings.Split(scr.Text, "\n")
	if len(lines) != 5 || lines[4] != strings.Repeat(" ", 9)+"XY" {
		t.Fatalf("screen text = %q, want XY on line 4 at column 9 (0-based)", scr.Text)
	}
	if scr.CursorRow != 4 || scr.CursorCol != 11 || scr.Cols != 80 || scr.Rows != 24 || scr.AltScreen {
		t.Errorf("screen = %+v, want cursor 4,11, 80x24, main screen", scr)
	}

	if err := s.Resize(100, 30); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if scr := s.Screen(); scr.Cols != 100 || scr.Rows != 30 {
		t.Errorf("after Resize screen is %dx%d, want 100x30", scr.Cols, scr.Rows)
	}
	if info := s.Info(); info.Cols != 100 || info.Rows != 30 {
		t.Errorf("after Resize info is %dx%d, want 100x30", info.Cols, info.Rows)
	}
	// The program sees the new size too.
	sendWait(t, s, "\nstty size\n", `(?m)^30 100$`)

	for _, bad := range [][2]int{{0, 10}, {10, -1}, {MaxSize + 1, 10}} {
		if err := s.Resize(bad[0], bad[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("Resize(%d, %d) = %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// TestTerminalQueries checks that the emulator answers a cursor position
// report request, so programs that ask do not hang.
func TestTerminalQueries(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{Cols: 80, Rows: 24})
	sendWait(t, s, `printf '\033[2J\033[3;7H\033[6n'; IFS= read -rs -n 32 -d R -t 10 x; echo; echo "CPR=${x#*[}"`+"\n",
		`CPR=\d`)
	r, _ := s.Read(0, false, 0)
	if !strings.Contains(r.Data, "CPR=3;7\n") {
		t.Errorf("output = %q, want CPR=3;7", r.Data)
	}
}

func TestFullScreenPrograms(t *testing.T) {
	t.Run("less", func(t *testing.T) {
		if _, err := exec.LookPath("less"); err != nil {
			t.Skip("less not installed")
		}
		m := newManager(t, Options{})
		s := open(t, m, OpenOptions{Cols: 80, Rows: 24})
		sendWait(t, s, "seq 1 200 | less\n", `(?m)^23$`)
		scr := s.Screen()
		lines := strings.Split(scr.Text, "\n")
		if !scr.AltScreen || len(lines) < 23 || lines[0] != "1" || lines[22] != "23" {
			t.Fatalf("less screen = %+v, want alt screen with 1..23", scr)
		}
		keys, err := KeySequence([]string{"PageDown"})
		if err != nil {
			t.Fatal(err)
		}
		sendWait(t, s, keys, `(?m)^46$`)
		// "46" may be in the output before the line feed after it, which
		// scrolls the screen to start at 24: wait for the screen.
		hivetest.Eventually(t, 5*time.Second, "the screen after PageDown", func() error {
			if lines := strings.Split(s.Screen().Text, "\n"); lines[0] != "24" {
				return fmt.Errorf("first line = %q, want 24", lines[0])
			}
			return nil
		})
		// A program may flush pending input as it exits: wait for the prompt.
		sendWait(t, s, "q", prompt)
		sendWait(t, s, "echo done-$((2+3))\n", `done-5`)
		if s.Screen().AltScreen {
			t.Errorf("still on the alternate screen after quitting less")
		}
	})
	t.Run("vim", func(t *testing.T) {
		if _, err := exec.LookPath("vim"); err != nil {
			t.Skip("vim not installed")
		}
		m := newManager(t, Options{})
		s := open(t, m, OpenOptions{Cols: 80, Rows: 24})
		file := t.TempDir() + "/note.txt"
		sendWait(t, s, "vim -u NONE -N -n '"+file+"'\n", `\[New`)
		if !s.Screen().AltScreen {
			t.Errorf("vim runs on the main screen")
		}
		// Type a line, then write and quit.
		sendWait(t, s, "ihello from vim", `hello from vim`)
		esc, _ := KeySequence([]string{"Esc"})
		sendWait(t, s, esc+":wq\r", `(?s)written.*`+prompt)
		sendWait(t, s, "cat '"+file+"'; echo cat-$((1+2))\n", `cat-3`)
		b, err := os.ReadFile(file)
		if err != nil || string(b) != "hello from vim\n" {
			t.Errorf("file = %q, %v; want %q", b, err, "hello from vim\n")
		}
		if s.Screen().AltScreen {
			t.Errorf("still on the alternate screen after quitting vim")
		}
	})
}

func TestReadStripsUnlessRaw(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	w := sendWait(t, s, `printf '\033[31m%s\033[0m\n' red-$((40+2))`+"\n", `red-42`)

	stripped, err := s.Read(w.Offset, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stripped.Data, "red-42\n") || strings.ContainsAny(stripped.Data, "\x1b\r") {
		t.Errorf("stripped = %q, want red-42 without escapes or \\r", stripped.Data)
	}
	raw, err := s.Read(w.Offset, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw.Data, "\x1b[31mred-42\x1b[0m\r\n") {
		t.Errorf("raw = %q, want the color escapes and \\r\\n", raw.Data)
	}
	if raw.Offset != w.Offset || raw.Next < w.Next {
		t.Errorf("raw read offsets %d..%d, want from %d to at least %d", raw.Offset, raw.Next, w.Offset, w.Next)
	}

	// Reading on from Next gives only newer output.
	sendWait(t, s, "echo later-$((1+2))\n", `later-3`)
	r, _ := s.Read(raw.Next, false, 0)
	if strings.Contains(r.Data, "red-42") || !strings.Contains(r.Data, "later-3") {
		t.Errorf("Read(Next) = %q, want only the later output", r.Data)
	}
	// Small reads (longer than any sequence here), one after the other, give the same text as one read.
	var b strings.Builder
	for off := w.Offset; ; {
		r, err := s.Read(off, false, 16)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(r.Data)
		if r.Next == off {
			break
		}
		off = r.Next
	}
	whole, _ := s.Read(w.Offset, false, 0)
	if b.String() != whole.Data {
		t.Errorf("16-byte reads = %q, one read = %q", b.String(), whole.Data)
	}

	for _, c := range []struct {
		since int64
		max   int
	}{{-1, 0}, {0, -1}} {
		if _, err := s.Read(c.since, false, c.max); !errors.Is(err, ErrInvalid) {
			t.Errorf("Read(%d, _, %d) = %v, want ErrInvalid", c.since, c.max, err)
		}
	}
}

func TestSendWaitQuiet(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo ready-$((3*3))\n", `ready-9`)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// Without a pattern, SendWait returns once output has been quiet.
	r, err := s.SendWait(ctx, "echo q-$((5+5))\n", 500*time.Millisecond, nil)
	if err != nil || !strings.Contains(r.Data, "q-10") || r.Matched {
		t.Errorf("SendWait quiet = %+v, %v; want q-10, not matched", r, err)
	}
	// A context that ends first still returns the output so far.
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	r, err = s.SendWait(short, "echo never-matches\n", 0, regexp.MustCompile(`no-such-text`))
	if !errors.Is(err, context.DeadlineExceeded) || r.Matched {
		t.Errorf("SendWait past deadline = %+v, %v; want DeadlineExceeded", r, err)
	}
}

// A session's limits are rlimits of its shell, with the manager's
// defaults; one over the manager's ceiling is refused, naming the field.
func TestOpenWithLimits(t *testing.T) {
	m := newManager(t, Options{Limits: limits.Policy{Default: limits.Limits{Nofile: 100}, Max: limits.Limits{MemoryMB: 512}}})
	s := open(t, m, OpenOptions{Limits: limits.Limits{MemoryMB: 256}})
	sendWait(t, s, "echo n=$(ulimit -n) v=$(ulimit -v)\n", `(?m)^n=100 v=262144\r?$`)
	if by := s.Info().LimitsBy; len(by) != 2 || by[limits.Memory] != limits.ByRlimit || by[limits.Nofile] != limits.ByRlimit {
		t.Errorf("Info().LimitsBy = %v, want memory_mb and nofile by rlimit", by)
	}
	if v := s.Info().View(); v.LimitsEnforcedBy[limits.Memory] != limits.ByRlimit {
		t.Errorf("the view's limits_enforced_by = %v", v.LimitsEnforcedBy)
	}
	_, err := m.Open(OpenOptions{Limits: limits.Limits{MemoryMB: 1024}})
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "limits.memory_mb 1024") || !strings.Contains(err.Error(), "max_memory_mb") {
		t.Errorf("Open over the ceiling = %v, want ErrInvalid naming limits.memory_mb and its ceiling", err)
	}
	if n := len(m.List()); n != 1 {
		t.Errorf("%d sessions after the refused Open, want 1", n)
	}
}

func TestManagerNamesAndLimits(t *testing.T) {
	m := newManager(t, Options{MaxSessions: 2})
	a := open(t, m, OpenOptions{Name: "build-1"})
	if !regexp.MustCompile(`^pty_[0-9a-f]{8}$`).MatchString(a.ID()) {
		t.Errorf("id %q, want pty_ and 8 hex digits", a.ID())
	}

	for _, c := range []struct {
		name  string
		o     OpenOptions
		field string
		want  error
	}{
		{"bad name", OpenOptions{Name: "Build_1"}, "name", ErrInvalid},
		{"long name", OpenOptions{Name: strings.Repeat("a", 64)}, "name", ErrInvalid},
		{"taken name", OpenOptions{Name: "build-1"}, "name", ErrInvalid},
		{"bad cwd", OpenOptions{Cwd: "/no/such/dir"}, "cwd", ErrInvalid},
		{"bad cols", OpenOptions{Cols: -1}, "cols", ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.Open(c.o)
			if !errors.Is(err, c.want) || !strings.HasPrefix(err.Error(), c.field) {
				t.Errorf("Open(%+v) = %v, want %v naming %s", c.o, err, c.want, c.field)
			}
		})
	}

	b := open(t, m, OpenOptions{})
	if _, err := m.Open(OpenOptions{}); !errors.Is(err, ErrLimit) {
		t.Errorf("third Open with MaxSessions 2 = %v, want ErrLimit", err)
	}

	if got, err := m.Get("build-1"); err != nil || got != a {
		t.Errorf("Get by name = %v, %v", got, err)
	}
	if got, err := m.Get(b.ID()); err != nil || got != b {
		t.Errorf("Get by id = %v, %v", got, err)
	}
	_, err := m.Get("pty_00000000")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "session_id") {
		t.Errorf("Get(unknown) = %v, want ErrNotFound naming session_id", err)
	}

	list := m.List()
	if len(list) != 2 || list[0].ID != a.ID() || list[0].Name != "build-1" || list[0].Cmd != defaultShell ||
		list[0].Pid <= 0 || !list[0].Running || list[0].Cols != DefaultCols || list[0].Rows != DefaultRows {
		t.Errorf("List = %+v", list)
	}

	// Closing frees the name and the slot.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get("build-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Close = %v, want ErrNotFound", err)
	}
	if err := a.Send("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	open(t, m, OpenOptions{Name: "build-1"})
}

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Options{Dir: dir})
	s := open(t, m, OpenOptions{Cmd: "echo file-$((2*21))"})
	waitExited(t, s)
	s.Close()
	b, err := os.ReadFile(dir + "/" + s.ID() + ".pty")
	if err != nil || !strings.Contains(string(b), "file-42\r\n") {
		t.Errorf("output file = %q, %v; want file-42", b, err)
	}
	r, err := s.Read(0, false, 0)
	if err != nil || r.Data != "file-42\n" || !r.EOF || r.Running {
		t.Errorf("Read after Close = %+v, %v", r, err)
	}
}

func TestEnv(t *testing.T) {
	m := newManager(t, Options{})
	s := open(t, m, OpenOptions{
		Cmd: `echo "term=$TERM zdot=${ZDOTDIR-unset} zsh=${ZSH_FOO-unset} mine=$MINE"`,
		Env: []string{"PATH=" + os.Getenv("PATH"), "ZDOTDIR=/x", "ZSH_FOO=1", "MINE=yes"},
	})
	r := readAll(t, s)
	if want := "term=xterm-256color zdot=unset zsh=unset mine=yes\n"; r.Data != want {
		t.Errorf("env output = %q, want %q", r.Data, want)
	}
}

// readAll waits until the session's output has ended and reads it all.
func readAll(t *testing.T, s *Session) ReadResult {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		changed := s.stream.Changed()
		if s.stream.Stats().Closed {
			r, err := s.Read(0, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("output of %s did not end", s.ID())
		}
	}
}

// processGone reports whether pid has exited (a zombie counts as gone).
func processGone(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		i := strings.LastIndexByte(string(b), ')')
		return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
	} else if _, err := os.Stat("/proc/self"); err == nil {
		return true // /proc works and pid is not in it
	}
	return exec.Command("kill", "-0", strconv.Itoa(pid)).Run() != nil
}
