//go:build unix

package reliability

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
)

// Row 21: a program in a PTY session prints what makes the screen
// emulator panic (a scroll region past the last row, then bare line
// feeds: `stty -onlcr; printf '\e[2;50r'; ...` on a 24-row screen). It
// took the daemon down (a panic in the session's reader), and the next
// daemon too as it replayed the output. Now the region is cut to the
// screen as a terminal does: the daemon answers on and the screen draws
// what follows, with the holder (a held session, and a new daemon that
// replays it) and without. (A panic the emulator still finds is
// recovered: internal/pty's TestScreenFeedSurvivesTheEmulatorsPanics.)
func TestRow21ScreenEmulatorPanics(t *testing.T) {
	const poison = `stty -onlcr; printf '\033[2;50r'; printf '\n%.0s' $(seq 100); echo POISONED-$((6*7))` + "\n"
	survived := 0
	for _, mode := range [][]string{nil, {"--hold-jobs=false"}} {
		dir := newStateDir(t)
		d := startDaemon(t, dir, mode...)
		s := d.MCP()
		var o ptyOpened
		s.MustCall("terminal_pty_open", map[string]any{"cmd": "bash --norc --noprofile", "rows": 24, "cols": 80}, &o)
		var out ptyOutput
		s.MustCall("terminal_pty_send", map[string]any{"session_id": o.SessionID, "input": poison, "wait_for": "POISONED-42"}, &out)
		if !out.Matched {
			t.Fatalf("%v: the poison did not run: %+v", mode, out)
		}
		s.MustCall("terminal_pty_send", map[string]any{"session_id": o.SessionID, "input": "echo AFTER-$((2*21))\n", "wait_for": "AFTER-42"}, nil)
		var alive task
		s.MustCall("run", map[string]any{"cmd": "echo alive"}, &alive)
		if alive.Status != "done" || alive.StdoutTail != "alive\n" {
			t.Fatalf("%v: the daemon after the poison: %+v", mode, alive)
		}
		if err := screenShows(t, s, o.SessionID, "AFTER-42"); err != nil {
			t.Errorf("%v: %v", mode, err)
		}
		if strings.Contains(d.Log(), "panic") {
			t.Errorf("%v: the daemon's log tells of a panic:\n%s", mode, d.Log())
		}
		if mode == nil {
			// A new daemon adopts the held session and replays its output.
			s.Close()
			d.Kill()
			d = startDaemon(t, dir)
			s = d.MCP()
			var again task
			s.MustCall("run", map[string]any{"cmd": "echo alive"}, &again)
			if again.Status != "done" {
				t.Fatalf("the next daemon, after replaying the poison: %+v", again)
			}
			if err := screenShows(t, s, o.SessionID, "AFTER-42"); err != nil {
				t.Errorf("the next daemon, after replaying the poison: %v", err)
			}
		}
		s.MustCall("terminal_pty_close", map[string]any{"session_id": o.SessionID}, nil)
		s.Close()
		d.Stop()
		survived++
	}
	figure(t, 21, "a PTY program's output that made the screen emulator panic (a scroll region past the last row, bare line feeds): %d daemons of %d answered on (held, replayed by the next daemon, and own), the screen drew what followed, no panic", survived, 2)
}

// screenShows waits until the session's screen (terminal_pty_read with
// screen) shows want.
func screenShows(t *testing.T, s *hivetest.Session, id, want string) error {
	t.Helper()
	return hivetest.Wait(30*time.Second, func() error {
		var out ptyOutput
		s.MustCall("terminal_pty_read", map[string]any{"session_id": id, "screen": true}, &out)
		if !strings.Contains(out.Screen, want) {
			return fmt.Errorf("the screen lacks %q:\n%s", want, out.Screen)
		}
		return nil
	})
}
