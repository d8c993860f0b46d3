package pty

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hivetools/hive/internal/hivetest"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
)

// newStore opens a real store in a temp dir, closed when the test ends
// (after the test's managers, which are closed first: cleanups run last
// in, first out).
func newStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	return newStoreOpen(t, store.Open)
}

// newStoreOpen is newStore with open (store.OpenShared: a test that makes
// the store fail through a connection of its own).
func newStoreOpen(t *testing.T, open func(string) (*store.Store, error)) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hive.db")
	st, err := open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// markedBy lists the live processes whose environment holds kv.
func markedBy(kv string) []int {
	self := os.Getpid()
	var out []int
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pid != self }) {
		if proc.HasEnv(st.Pid, kv) {
			out = append(out, st.Pid)
		}
	}
	return out
}

// waitRecord polls the store until the session's record satisfies ok.
// Only the exit record needs it: it is written by the session's own
// goroutine, after Exited is closed.
func waitRecord(t *testing.T, st *store.Store, id string, what string, ok func(store.PTY) bool) store.PTY {
	t.Helper()
	var rec store.PTY
	hivetest.Eventually(t, testTimeout, fmt.Sprintf("record of %s: %s", id, what), func() error {
		var err error
		if rec, err = st.GetPTY(context.Background(), id); err == nil && !ok(rec) {
			err = fmt.Errorf("%+v", rec)
		}
		return err
	})
	return rec
}

// Every process of a session carries its marks, whatever environment the
// client gave: its own marks of those names, and a job mark, are dropped.
func TestSessionMarks(t *testing.T) {
	owner := t.TempDir()
	m := newManager(t, Options{Owner: owner})
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"inherited", nil},
		{"explicit, overriding", []string{"PATH=" + os.Getenv("PATH"), EnvID + "=pty_00000000", EnvOwner + "=/elsewhere", envJobID + "=j1", "MINE=yes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, m, OpenOptions{Env: c.env})
			r := sendWait(t, s, "sleep 3600 & echo BG=$!; env | grep -E '^HIVE_(JOB_ID|JOB_OWNER|PTY_ID)=' | sort; echo END=$((1+1))\n", `END=2`)
			bg := pidFrom(t, r.Data, "BG")
			// The names are the contract: the job engine's sweep looks for
			// HIVE_JOB_OWNER (internal/tools checks it is job.EnvJobOwner).
			want := fmt.Sprintf("HIVE_JOB_OWNER=%s\nHIVE_PTY_ID=%s\n", owner, s.ID())
			if !strings.Contains(r.Data, want) || strings.Contains(r.Data, "pty_00000000") || strings.Contains(r.Data, envJobID) {
				t.Errorf("HIVE_ variables in the shell:\n%s\nwant exactly:\n%s", r.Data, want)
			}
			for _, pid := range []int{s.Info().Pid, bg} {
				if !proc.HasEnv(pid, EnvID+"="+s.ID()) || !proc.HasEnv(pid, EnvOwner+"="+owner) {
					t.Errorf("pid %d lacks the marks in /proc/%d/environ", pid, pid)
				}
			}
			if c.env != nil && !strings.Contains(sendWait(t, s, "echo mine=$MINE\n", `mine=\w+`).Data, "mine=yes") {
				t.Errorf("the client's own variable is lost")
			}
			s.Close()
			if left := markedBy(EnvID + "=" + s.ID()); len(left) > 0 {
				t.Errorf("processes with the session's mark after Close: %v", left)
			}
		})
	}
}

// A session is recorded when it opens (before Open returns), when its
// process exits and when it is closed; then Get says what became of it,
// ReadEnded reads its output from the file, and Prune removes both.
func TestSessionRecord(t *testing.T) {
	st, _ := newStore(t)
	dir := t.TempDir()
	m := newManager(t, Options{Dir: dir, Store: st})
	cwd := t.TempDir()
	s := open(t, m, OpenOptions{Cmd: "read -r x; echo got-$x; exit 3", Cwd: cwd, Name: "rec", Cols: 90, Rows: 30})

	rec, err := st.GetPTY(context.Background(), s.ID())
	if err != nil {
		t.Fatalf("no record once Open returned: %v", err)
	}
	pid := s.Info().Pid
	ps, _ := proc.Read(pid)
	want := store.PTY{ID: s.ID(), Name: "rec", Cmd: "read -r x; echo got-$x; exit 3", Cwd: cwd, Pid: pid, PidStart: ps.Start, BootID: proc.BootID(),
		Cols: 90, Rows: 30, State: StateOpen, Started: rec.Started, OutputPath: filepath.Join(dir, s.ID()+".pty")}
	if rec != want || ps.Start == 0 || time.Since(rec.Started) > time.Minute {
		t.Errorf("open record = %+v\nwant        %+v", rec, want)
	}

	if err := s.Send("hello\r"); err != nil {
		t.Fatal(err)
	}
	waitExited(t, s)
	rec = waitRecord(t, st, s.ID(), "state exited", func(r store.PTY) bool { return r.State == StateExited })
	if rec.ExitCode == nil || *rec.ExitCode != 3 || rec.Exited.IsZero() || !rec.Ended.IsZero() {
		t.Errorf("exit record = %+v, want exit code 3, exited, not ended", rec)
	}

	s.Close()
	rec, _ = st.GetPTY(context.Background(), s.ID())
	if rec.State != StateClosed || rec.Ended.IsZero() || rec.ExitCode == nil || *rec.ExitCode != 3 || rec.Bytes != s.Info().Bytes || rec.Bytes == 0 {
		t.Errorf("record once Close returned = %+v, want closed, ended, exit code 3, %d bytes", rec, s.Info().Bytes)
	}

	for _, asked := range []string{s.ID(), "rec"} {
		_, err := m.Get(asked)
		if !errors.Is(err, ErrEnded) || !strings.HasPrefix(err.Error(), fmt.Sprintf("session_id %q", asked)) ||
			!strings.Contains(err.Error(), "was closed at") || !strings.Contains(err.Error(), rec.OutputPath) {
			t.Errorf("Get(%s) after Close = %v; want ErrEnded saying it was closed and where its output is", asked, err)
		}
	}
	live, _ := s.Read(0, false, 0)
	liveRaw, _ := s.Read(0, true, 0)
	for _, raw := range []bool{false, true} {
		r, err := m.ReadEnded(s.ID(), 0, raw, 0)
		want, _ := s.Read(0, raw, 0)
		if err != nil || r.Data != want.Data || r.Next != want.Next || !r.EOF || r.Running || r.ExitCode == nil || *r.ExitCode != 3 {
			t.Errorf("ReadEnded(raw %v) = %+v, %v; want %q to %d, EOF, exit code 3", raw, r, err, want.Data, want.Next)
		}
	}
	if !strings.Contains(live.Data, "got-hello\n") {
		t.Errorf("output %q, want got-hello", live.Data)
	}
	// From an offset, as Read: here past the echo of the input.
	at := int64(strings.Index(liveRaw.Data, "got-"))
	if r, _ := m.ReadEnded("rec", at, false, 0); r.Data != "got-hello\n" || r.Offset != at {
		t.Errorf("ReadEnded from %d = %+v, want got-hello", at, r)
	}
	if r, _ := m.ReadEnded(s.ID(), 1<<20, false, 0); r.Data != "" || !r.EOF || r.Next != rec.Bytes {
		t.Errorf("ReadEnded past the end = %+v, want EOF at %d", r, rec.Bytes)
	}

	// A session of the same name opens anew; Get finds it, not the record.
	s2 := open(t, m, OpenOptions{Name: "rec"})
	if got, err := m.Get("rec"); err != nil || got != s2 {
		t.Errorf("Get(rec) with a new session of that name = %v, %v", got, err)
	}

	if n, err := m.Prune(context.Background(), time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Errorf("Prune = %d, %v; want the closed session's record", n, err)
	}
	if _, err := os.Stat(rec.OutputPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output file after Prune: %v, want it removed", err)
	}
	if _, err := m.Get(s.ID()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Prune = %v, want ErrNotFound", err)
	}
	if _, err := st.GetPTY(context.Background(), s2.ID()); err != nil {
		t.Errorf("Prune took the open session's record: %v", err)
	}
}

// Sessions a closing Manager ends (the daemon stops) are recorded
// interrupted, as jobs are: the client did not close them. The next
// Manager on the store says so and does not take them for a crash's.
func TestManagerCloseRecordsInterrupted(t *testing.T) {
	st, _ := newStore(t)
	dir := t.TempDir()
	m := NewManager(Options{Dir: dir, Store: st})
	s := open(t, m, OpenOptions{})
	sendWait(t, s, "echo up-$((1+1))\n", `up-2`)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetPTY(context.Background(), s.ID())
	if err != nil || rec.State != StateInterrupted || rec.Ended.IsZero() || rec.ExitCode == nil {
		t.Fatalf("record after Manager.Close = %+v, %v; want interrupted, ended, with the exit code", rec, err)
	}
	m2 := newManager(t, Options{Dir: dir, Store: st})
	if n, err := m2.Recover(context.Background()); n != 0 || err != nil {
		t.Errorf("Recover after a clean stop = %d, %v; want nothing to do", n, err)
	}
	if _, err := m2.Get(s.ID()); !errors.Is(err, ErrEnded) || !strings.Contains(err.Error(), "the session ended when the daemon stopped (interrupted at ") {
		t.Errorf("Get on the next manager = %v, want ErrEnded saying the daemon stopped", err)
	}
}

// A store that cannot record a new session fails Open with
// ErrNotRecorded, and nothing is left running: no process, no zombie, no
// session, no output file.
func TestOpenUnrecorded(t *testing.T) {
	for _, c := range []struct {
		name  string
		open  func(string) (*store.Store, error)
		spoil func(t *testing.T, st *store.Store, path string)
	}{
		{"writes fail", store.OpenShared, func(t *testing.T, st *store.Store, path string) {
			// Another connection to the same file adds a trigger that
			// refuses every new session record, as a full disk would.
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TRIGGER no_room BEFORE INSERT ON ptys BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END`); err != nil {
				t.Fatal(err)
			}
		}},
		{"store closed", store.Open, func(t *testing.T, st *store.Store, path string) { st.Close() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, path := newStoreOpen(t, c.open)
			owner, dir := t.TempDir(), t.TempDir()
			m := newManager(t, Options{Dir: dir, Owner: owner, Store: st})
			c.spoil(t, st, path)
			children := len(proc.Children(os.Getpid()))
			ran := filepath.Join(t.TempDir(), "ran")
			s, err := m.Open(OpenOptions{Cmd: "touch " + ran + "; exec sleep 3600"})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded with a store that cannot record it")
			}
			if !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "nothing was started") {
				t.Errorf("Open = %v, want ErrNotRecorded saying nothing was started", err)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the session's command ran though its record could not be written")
			}
			if left := markedBy(EnvOwner + "=" + owner); len(left) > 0 {
				t.Errorf("processes of the session left running: %v", left)
			}
			if n := len(proc.Children(os.Getpid())); n != children {
				t.Errorf("%d children after the failed Open, %d before: its process was not reaped", n, children)
			}
			if l := m.List(); len(l) != 0 {
				t.Errorf("List = %+v, want no session", l)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files left in Dir: %v", ents)
			}
		})
	}
}

// orphan starts a process tree as a dead daemon's session would leave
// it: a session leader (bash, then sleep) with a background sleep in its
// session, env as given. It returns the leader's command, a channel
// closed once the leader was reaped, and the background process's pid.
// The test's cleanup kills what is left of them.
func orphan(t *testing.T, env []string) (*exec.Cmd, <-chan struct{}, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "sleep 3600 >/dev/null 2>&1 & echo $!; exec sleep 3600 >/dev/null")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var bg int
	if _, serr := fmt.Sscan(line, &bg); err != nil || serr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("orphan's background pid: %q, %v", line, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	bgStat, _ := proc.Read(bg)
	t.Cleanup(func() {
		cmd.Process.Kill() // through a pidfd: never another process
		<-done
		// The background process is not our child: signal it only if it
		// is still the one started here.
		if p, ok := proc.Pin(bg, func(s proc.Stat) bool { return s.Start == bgStat.Start }); ok {
			p.Signal(syscall.SIGKILL)
			p.Close()
		}
	})
	return cmd, done, bg
}

// startSleep starts "sleep 3600" with env; the test's cleanup kills and
// reaps it if it still runs.
func startSleep(t *testing.T, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "3600")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// waitGone waits until pid has exited (a zombie counts).
func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	hivetest.Eventually(t, testTimeout, what+" to end after Recover", func() error {
		if !processGone(pid) {
			return fmt.Errorf("%s (pid %d) still runs", what, pid)
		}
		return nil
	})
}

// Recover turns a dead daemon's open and exited records into interrupted
// ones and terminates their processes, but only those proven to be
// theirs: the leader by pid and start time (and the members of its
// session), others by the session's marks. A record whose pid now belongs
// to an unrelated process, a process with the id but another owner, and
// one with the owner but an unrecorded id are left alone.
func TestRecover(t *testing.T) {
	st, _ := newStore(t)
	owner, dir := t.TempDir(), t.TempDir()
	ctx := context.Background()
	base := os.Environ()
	mark := func(id, own string) []string {
		return append(base[:len(base):len(base)], EnvID+"="+id, EnvOwner+"="+own)
	}

	// pty_0000000a: open, its tree unmarked (found by pid, start time and session).
	leader, leaderDone, member := orphan(t, base)
	leaderStat, _ := proc.Read(leader.Process.Pid)
	out := filepath.Join(dir, "pty_0000000a.pty")
	written := "\x1b[1mbefore the crash\x1b[0m\r\n"
	os.WriteFile(out, []byte(written), 0o600)
	// pty_0000000b: exited, a process it left carries its marks.
	left := startSleep(t, mark("pty_0000000b", owner))
	// pty_0000000c: open, but its pid is now an unrelated process (another start time).
	unrelated := startSleep(t, base)
	unrelatedStat, _ := proc.Read(unrelated.Process.Pid)
	// Marked processes that are not of those sessions.
	otherOwner := startSleep(t, mark("pty_0000000b", "/another/state/dir"))
	otherID := startSleep(t, mark("pty_0000000d", owner))
	// pty_0000000f: open, its pid and start time right but of another boot.
	otherBoot := startSleep(t, base)
	otherBootStat, _ := proc.Read(otherBoot.Process.Pid)

	code := 0
	recs := []store.PTY{
		{ID: "pty_0000000a", Cmd: "bash", State: StateOpen, Pid: leader.Process.Pid, PidStart: leaderStat.Start, BootID: proc.BootID(), Started: time.Now(), OutputPath: out},
		{ID: "pty_0000000b", Cmd: "bash", State: StateExited, Pid: 1, PidStart: 1, ExitCode: &code, Started: time.Now(), Exited: time.Now()},
		{ID: "pty_0000000c", Cmd: "bash", State: StateOpen, Pid: unrelated.Process.Pid, PidStart: unrelatedStat.Start + 1, Started: time.Now()},
		{ID: "pty_0000000e", Cmd: "bash", State: StateClosed, Started: time.Now(), Ended: time.Now()},
		{ID: "pty_0000000f", Cmd: "bash", State: StateOpen, Pid: otherBoot.Process.Pid, PidStart: otherBootStat.Start, BootID: "another-boot", Started: time.Now()},
	}
	for _, r := range recs {
		if err := st.PutPTY(ctx, r); err != nil {
			t.Fatal(err)
		}
	}

	m := newManager(t, Options{Dir: dir, Owner: owner, Store: st})
	n, err := m.Recover(ctx)
	if err != nil || n != 4 {
		t.Fatalf("Recover = %d, %v; want the 4 open and exited sessions", n, err)
	}
	select {
	case <-leaderDone:
	case <-time.After(testTimeout):
		t.Fatalf("the leader of pty_0000000a still runs after Recover")
	}
	waitGone(t, "the member of pty_0000000a's session", member)
	waitGone(t, "the marked process of pty_0000000b", left.Process.Pid)
	for _, c := range []struct {
		what string
		cmd  *exec.Cmd
	}{{"the unrelated process at pty_0000000c's pid", unrelated}, {"a process with another owner", otherOwner}, {"a process with an unrecorded id", otherID},
		{"a process proven by a pid and start time of another boot", otherBoot}} {
		if processGone(c.cmd.Process.Pid) {
			t.Errorf("Recover terminated %s (pid %d)", c.what, c.cmd.Process.Pid)
		}
	}

	for _, r := range recs {
		got, _ := st.GetPTY(ctx, r.ID)
		wantState := StateInterrupted
		if r.State == StateClosed {
			wantState = StateClosed
		}
		if got.State != wantState || got.Ended.IsZero() {
			t.Errorf("%s after Recover: %+v, want %s with an end", r.ID, got, wantState)
		}
	}
	if got, _ := st.GetPTY(ctx, "pty_0000000a"); got.Bytes != int64(len(written)) {
		t.Errorf("pty_0000000a's bytes = %d, want the file's %d", got.Bytes, len(written))
	}
	_, err = m.Get("pty_0000000a")
	if !errors.Is(err, ErrEnded) || !regexp.MustCompile(`^session_id "pty_0000000a": the session ended when the daemon stopped \(interrupted at \d\d:\d\d:\d\d\); its output is in `+regexp.QuoteMeta(out)+`$`).MatchString(err.Error()) {
		t.Errorf("Get(interrupted) = %v", err)
	}
	if r, err := m.ReadEnded("pty_0000000a", 0, false, 0); err != nil || r.Data != "before the crash\n" || !r.EOF || r.Running {
		t.Errorf("ReadEnded(interrupted) = %+v, %v", r, err)
	}
	if _, err := m.Get("pty_0000000b"); !errors.Is(err, ErrEnded) || !strings.Contains(err.Error(), "kept in memory only") {
		t.Errorf("Get(interrupted, no file) = %v", err)
	}
	if n, err := m.Recover(ctx); n != 0 || err != nil {
		t.Errorf("second Recover = %d, %v; want nothing to do", n, err)
	}
}
