//go:build unix

package pty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/charmbracelet/x/vt"
	creackpty "github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/shell"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/view"
)

const (
	// closeGrace is how long Close waits for the process to exit after
	// SIGHUP before it kills the whole session.
	closeGrace = time.Second
	// rehupFirst is when Close first repeats the SIGHUP to a process that
	// has not exited (see awaitHangup).
	rehupFirst = 5 * time.Millisecond
	// drainGrace bounds how long Close waits, once every process of the
	// session is gone, for the last output before it closes the pty. Only a
	// process outside the session that still holds the terminal makes it
	// wait that long.
	drainGrace = 500 * time.Millisecond
	// sendTimeout bounds one Send when the program does not read its input.
	sendTimeout = 10 * time.Second
	// replyTimeout bounds the write of one answer to a terminal query.
	replyTimeout = time.Second
	// scrollbackLines is the emulator's scrollback: the output stream is the
	// history, so the emulator keeps just the screen.
	scrollbackLines = 1
)

// Session is one process on a pseudo-terminal. Its methods are safe for
// concurrent use. Read and Screen keep working after the process exits and
// after Close; Send and Resize then fail.
type Session struct {
	m        *Manager
	id       string
	name     string
	cmdText  string
	cwd      string
	started  time.Time
	cmd      *exec.Cmd
	pid      int
	pidStart uint64      // the process's start time (proc.Stat.Start), 0 if unknown
	master   *os.File    // pollable: Close interrupts blocked reads and writes
	tty      string      // the terminal's path (/dev/pts/N)
	reading  atomic.Bool // the reader holds output not yet in the stream and the emulator
	setUp    atomic.Bool // the program has set up its terminal, or awaitSetup gave up waiting
	stream   *output.Stream

	emuMu   sync.Mutex // guards emu and screen
	emu     *vt.Emulator
	screen  screenFeed     // how output reaches emu (feedScreenLocked)
	replies *io.PipeWriter // the emulator's answer pipe; closed at the end of Close

	writeMu sync.Mutex // one writer to the pty at a time

	mu         sync.Mutex // guards exitCode, exitedAt, endedAt, cols, rows
	exitCode   *int       // told to clients once its record is written
	exitRecord *int       // the exit code, for the record; set first
	exitedAt   time.Time
	endedAt    time.Time // set by Close once everything of the session is gone
	endState   string    // the record's state from endedAt on: StateClosed or StateInterrupted
	cols, rows int

	// recMu orders the session's record writes (open, exit, close: never
	// on the paths of Read, Send or Resize). Each write stores the state
	// of its moment, so the last one stored is the newest.
	recMu    sync.Mutex
	recorded bool // the first record was stored; guarded by recMu

	exited      chan struct{} // closed after the process was reaped
	waitDone    chan struct{} // closed when the wait goroutine has ended (its exit record written)
	readerDone  chan struct{} // closed after the last output went to the stream
	repliesDone chan struct{} // closed when the reply pump has ended
	closing     chan struct{} // closed when Close starts
	closeOnce   sync.Once
	// held is set when a Holder runs the session's process (the
	// daemon then has no cmd: see held_unix.go).
	held *heldState
	// limitsBy is how each of its limits is enforced (set at start).
	limitsBy limits.Enforced
}

func start(m *Manager, id string, o OpenOptions) (*Session, error) {
	defaultHangup()
	// The one shell policy (shell.Default): /bin/bash, never the first
	// bash on PATH nor $SHELL.
	sh, err := shell.Default()
	if err != nil {
		return nil, fmt.Errorf("open pty session: %w", err)
	}
	cmdText := o.Cmd
	var cmd *exec.Cmd
	if cmdText == "" {
		cmdText = defaultShell
		cmd = exec.Command(sh.Path, "--norc", "--noprofile")
	} else {
		cmd = exec.Command(sh.Path, "-c", o.Cmd)
	}
	cmd.Env = sh.Env(sessionEnv(o.Env, m.marks(id)))
	cmd.Dir = o.Cwd
	// Its limits, as rlimits set by the wrapper before the shell runs (a
	// session has no cgroup, nor a timeout for cpus).
	r, by := limits.Split(o.Limits, nil, 0)
	if !r.IsZero() && r.Nofile == 0 && m.opts.NofileSoft != nil {
		r.NofileSoft = m.opts.NofileSoft()
	}
	limits.Wrap(cmd, r)
	cwd := o.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}

	path := ""
	if m.opts.Dir != "" {
		if err := os.MkdirAll(m.opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("open pty session: %w", err)
		}
		path = filepath.Join(m.opts.Dir, id+".pty")
	}
	if m.opts.Holder != nil && path != "" {
		if !r.IsZero() {
			// The wrapper is this build's (limits.Wrap): the holder's own
			// binary may be an older one, without it.
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("open pty session: its limits need this binary's path: %w", err)
			}
			cmd.Path = exe
		}
		return startHeld(m, id, o, cmd, cmdText, cwd, path, by)
	}
	stream, err := output.Create(path, &output.Options{RingSize: m.opts.RingSize, FileCap: m.opts.FileCap})
	if err != nil {
		return nil, fmt.Errorf("open pty session: %w", err)
	}

	// A record comes first, so a store that cannot be written starts
	// nothing, and a daemon that dies from now on leaves a session its
	// successor knows (by the session's marks until the pid is recorded).
	if st := m.opts.Store; st != nil {
		if err := st.PutPTY(context.Background(), store.PTY{ID: id, Name: o.Name, Cmd: cmdText, Cwd: cwd, Cols: o.Cols, Rows: o.Rows,
			State: StateOpening, Started: time.Now(), OutputPath: path, BootID: proc.BootID()}); err != nil {
			stream.Close()
			return nil, fmt.Errorf("open pty session: %w: nothing was started: %w", ErrNotRecorded, err)
		}
	}
	master, tty, err := startPTY(cmd, o.Cols, o.Rows)
	if err != nil {
		stream.Close()
		if st := m.opts.Store; st != nil {
			st.DeletePTY(context.Background(), id)
		}
		return nil, fmt.Errorf("open pty session: start %q: %w", cmdText, err)
	}

	pid := cmd.Process.Pid
	var pidStart uint64
	if st, ok := proc.Read(pid); ok { // not reaped yet: a zombie still reads
		pidStart = st.Start
	}

	emu := vt.NewEmulator(o.Cols, o.Rows)
	emu.SetScrollbackSize(scrollbackLines)
	replies, _ := emu.InputPipe().(*io.PipeWriter)

	s := &Session{
		m:           m,
		id:          id,
		name:        o.Name,
		cmdText:     cmdText,
		cwd:         cwd,
		started:     time.Now(),
		cmd:         cmd,
		pid:         pid,
		pidStart:    pidStart,
		master:      master,
		tty:         tty,
		stream:      stream,
		emu:         emu,
		replies:     replies,
		cols:        o.Cols,
		rows:        o.Rows,
		exited:      make(chan struct{}),
		waitDone:    make(chan struct{}),
		readerDone:  make(chan struct{}),
		repliesDone: make(chan struct{}),
		closing:     make(chan struct{}),
		limitsBy:    by,
	}
	go s.wait()
	go s.read()
	go s.pumpReplies()
	// The id is handed out next: the record must be stored first, so a
	// daemon that dies from now on leaves a session its successor knows.
	if err := s.record(true); err != nil {
		s.Close()
		if path != "" {
			os.Remove(path)
		}
		return nil, fmt.Errorf("open pty session: %w, so its process was killed: %w", ErrNotRecorded, err)
	}
	return s, nil
}

// hangupOnce guards defaultHangup's change of the process's SIGHUP.
var hangupOnce sync.Once

// defaultHangup makes sure the programs of sessions start with SIGHUP at
// its default, so that a hangup ends them as it ends a program in a
// terminal. A process that ignores SIGHUP (a daemon started by nohup, or
// by any parent that ignored it) passes the ignore on through fork and
// exec, and a session's program that does not set SIGHUP itself (cat,
// python3 started as the session's command) would then outlive Close's
// hangup by the whole grace and be killed. Handled signals are reset at
// exec, so the ignore is turned into a Go handler whose signals are
// dropped: this process still ignores SIGHUP, its children do not.
func defaultHangup() {
	hangupOnce.Do(func() {
		if signal.Ignored(syscall.SIGHUP) {
			// Never read: signal drops what does not fit.
			signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
		}
	})
}

// startPTY starts cmd as a session leader with a new pty as its controlling
// terminal and returns the pty's master side, in non-blocking mode so that
// the runtime poller serves it and Close unblocks its readers, and the
// terminal's path.
func startPTY(cmd *exec.Cmd, cols, rows int) (*os.File, string, error) {
	ptmx, tty, err := creackpty.Open()
	if err != nil {
		return nil, "", err
	}
	defer tty.Close()
	if err := creackpty.Setsize(tty, &creackpty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		ptmx.Close()
		return nil, "", fmt.Errorf("set pty size: %w", err)
	}
	// creack/pty used ptmx.Fd(), which leaves it blocking for good; a
	// non-blocking duplicate goes to the poller instead.
	fd, err := unix.FcntlInt(ptmx.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	ptmx.Close()
	if err != nil {
		return nil, "", fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("pty master non-blocking: %w", err)
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")

	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := proc.Start(cmd); err != nil { // the daemon's reaper leaves it to wait
		master.Close()
		return nil, "", err
	}
	return master, tty.Name(), nil
}

// wait reaps the process and records its exit code, in memory and then
// in the store.
func (s *Session) wait() {
	defer close(s.waitDone)
	proc.Wait(s.cmd)
	s.exitedWith(exitCode(s.cmd.ProcessState))
}

// exitedWith records that the process exited with code, then tells.
func (s *Session) exitedWith(code int) {
	// The exit is recorded before anyone is told of it (state, Exited):
	// what a client reads is never contradicted after a crash.
	s.mu.Lock()
	s.exitRecord = &code
	s.exitedAt = time.Now()
	s.mu.Unlock()
	s.record(false)
	s.mu.Lock()
	s.exitCode = &code
	s.mu.Unlock()
	close(s.exited)
}

// record stores the session's record as it is now. The first record
// (first) is written by start; later ones only once it was stored, and a
// failure of those is logged: the record then stays behind its session
// until the next write, or until Recover finds it.
func (s *Session) record(first bool) error {
	st := s.m.opts.Store
	if st == nil {
		return nil
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if !first && !s.recorded {
		return nil
	}
	rec := s.snapshot()
	if err := st.PutPTY(context.Background(), rec); err != nil {
		if !first {
			s.m.opts.Logger.Error("could not record pty session", "session", s.id, "state", rec.State, "err", err)
		}
		return err
	}
	s.recorded = true
	return nil
}

// snapshot is the session's record as it is now.
func (s *Session) snapshot() store.PTY {
	bytes := s.stream.Stats().Total
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := store.PTY{
		ID: s.id, Name: s.name, Cmd: s.cmdText, Cwd: s.cwd, Pid: s.pid, PidStart: s.pidStart, BootID: proc.BootID(),
		Cols: s.cols, Rows: s.rows, State: StateOpen, Started: s.started, Exited: s.exitedAt, Ended: s.endedAt,
		OutputPath: s.stream.Path(), Bytes: bytes,
	}
	if s.exitRecord != nil {
		c := *s.exitRecord
		rec.ExitCode = &c
		rec.State = StateExited
	}
	if !s.endedAt.IsZero() {
		rec.State = s.endState
	}
	return rec
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// feedScreenLocked feeds output to the screen emulator (see screenFeed);
// s.emuMu is held.
func (s *Session) feedScreenLocked(b []byte) {
	if s.screen.onPanic == nil {
		s.screen.onPanic = func(v any) {
			s.m.opts.Logger.Error("the screen emulator failed on a session's output; its scroll region was reset", "session", s.id, "panic", fmt.Sprint(v))
		}
	}
	s.screen.write(s.emu, b)
}

// read copies the pty's output to the stream and the emulator, in the same
// order, until the terminal is gone (EIO once no process holds it, or the
// master closed by Close). It closes the stream once the process has exited.
func (s *Session) read() {
	defer close(s.readerDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.master.Read(buf)
		if n > 0 {
			s.reading.Store(true)
			s.emuMu.Lock()
			s.stream.Write(buf[:n])
			s.feedScreenLocked(buf[:n])
			s.emuMu.Unlock()
			s.reading.Store(false)
		}
		if err != nil {
			break
		}
	}
	<-s.exited
	s.stream.Close()
}

// pumpReplies forwards the emulator's answers to terminal queries to the
// program's input. It keeps draining after write errors, so the emulator
// never blocks, and ends when Close closes the answer pipe.
func (s *Session) pumpReplies() {
	defer close(s.repliesDone)
	buf := make([]byte, 1024)
	for {
		n, err := s.emu.Read(buf)
		if p := s.heldReplies(buf[:n]); len(p) > 0 {
			s.writeInput(p, replyTimeout)
		}
		if err != nil {
			return
		}
	}
}

// writeInput writes p to the pty, giving up after timeout.
func (s *Session) writeInput(p []byte, timeout time.Duration) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.master.SetWriteDeadline(time.Now().Add(timeout))
	_, err := s.master.Write(p)
	return err
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Exited returns a channel closed once the session's process has exited and
// its exit code is recorded.
func (s *Session) Exited() <-chan struct{} { return s.exited }

// Info describes the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	cols, rows := s.cols, s.rows
	s.mu.Unlock()
	running, code := s.state()
	return Info{
		ID: s.id, Name: s.name, Cmd: s.cmdText, Cwd: s.cwd, Pid: s.pid,
		Cols: cols, Rows: rows, SessionState: view.SessionState{Running: running, ExitCode: code},
		Started: s.started, Bytes: s.stream.Stats().Total, LimitsBy: s.limitsBy,
	}
}

func (s *Session) state() (running bool, code *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitCode == nil {
		return true, nil
	}
	c := *s.exitCode
	return false, &c
}

// usable reports why the session takes no input or resize, if it does not.
func (s *Session) usable() error {
	select {
	case <-s.closing:
		return fmt.Errorf("session_id %s: %w", s.id, ErrClosed)
	default:
	}
	if _, code := s.state(); code != nil {
		return fmt.Errorf("session_id %s: exit code %d: %w", s.id, *code, ErrExited)
	}
	return nil
}

// Send writes input to the program as typed: bytes as they are, control
// characters included ("\x03" is Ctrl-C, "\r" Enter; see KeySequence). It
// fails with ErrExited or ErrClosed when no program reads it, and with a
// timeout error when the program leaves its input unread for 10 s.
func (s *Session) Send(input string) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.awaitSetup()
	if err := s.writeInput([]byte(input), sendTimeout); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("session_id %s: input not read by the program within %s: %w", s.id, sendTimeout, err)
		}
		return fmt.Errorf("session_id %s: write input: %w", s.id, err)
	}
	return nil
}

// SendWait sends input, then waits until the output has been quiet for
// wait, or waitFor matches the ANSI-stripped output that arrived since the
// write, or the output ends, or ctx is done; with neither wait nor waitFor it
// returns at once. It returns that output (see ReadResult; Data is stripped
// text, at most MaxWaitBytes of the newest). Note that a shell echoes what it
// is sent, so a pattern should not match the input itself. When ctx ends
// first the result is still filled in and the error is ctx.Err().
func (s *Session) SendWait(ctx context.Context, input string, wait time.Duration, waitFor *regexp.Regexp) (ReadResult, error) {
	s.awaitSetup() // what the program prints before it is not the input's answer
	from := s.stream.Stats().Total
	if err := s.Send(input); err != nil {
		return ReadResult{}, err
	}
	w := waiter{s: s, res: ReadResult{Offset: from, Next: from}, next: from, startsLine: s.lineStartAt(from)}

	var quiet <-chan time.Time
	var timer *time.Timer
	if wait > 0 {
		timer = time.NewTimer(wait)
		defer timer.Stop()
		quiet = timer.C
	}
	for {
		changed := s.stream.Changed()
		grew, err := w.catchUp()
		if err != nil {
			return w.result(), err
		}
		if waitFor != nil && waitFor.Match(w.text) {
			w.res.Matched = true
			return w.result(), nil
		}
		if w.res.EOF || (wait <= 0 && waitFor == nil) {
			return w.result(), nil
		}
		if grew && timer != nil {
			timer.Reset(wait)
		}
		select {
		case <-changed:
		case <-quiet:
			return w.result(), nil
		case <-ctx.Done():
			return w.result(), ctx.Err()
		}
	}
}

// waiter accumulates SendWait's output.
type waiter struct {
	s       *Session
	res     ReadResult
	next    int64  // next raw offset to read
	pending []byte // raw bytes not yet stripped (a cut-off sequence)
	text    []byte
	// segs remember where in text each chunk starts, to drop old text.
	segs []seg
	// startsLine tells whether the output before the write ended a line.
	startsLine bool
}

// lineStart tells whether the next text starts a line.
func (w *waiter) lineStart() bool {
	if len(w.text) == 0 {
		return w.startsLine
	}
	return w.text[len(w.text)-1] == '\n'
}

type seg struct {
	off  int64 // raw offset of the chunk
	text int   // its start in text
}

// catchUp reads everything the stream holds past w.next.
func (w *waiter) catchUp() (grew bool, err error) {
	for {
		c, err := w.s.stream.Read(w.next, 64<<10)
		if err != nil {
			return grew, err
		}
		w.res.Skipped += c.Skipped
		w.res.EOF = c.EOF
		if len(c.Data) == 0 {
			if c.EOF && len(w.pending) > 0 {
				t, _ := strip(w.pending, true, w.lineStart())
				w.text = append(w.text, t...)
				w.pending = nil
			}
			return grew, nil
		}
		grew = true
		start := c.Offset - int64(len(w.pending))
		w.next = c.Next
		w.res.Next = c.Next
		raw := append(w.pending, c.Data...)
		t, used := strip(raw, c.EOF, w.lineStart())
		w.segs = append(w.segs, seg{off: start, text: len(w.text)})
		w.text = append(w.text, t...)
		w.pending = append([]byte(nil), raw[used:]...)
		w.trim()
	}
}

// trim keeps at most MaxWaitBytes of text, dropping whole chunks.
func (w *waiter) trim() {
	for len(w.text) > MaxWaitBytes && len(w.segs) > 1 {
		cut := w.segs[1].text
		w.text = w.text[cut:]
		w.segs = w.segs[1:]
		for i := range w.segs {
			w.segs[i].text -= cut
		}
		w.res.Offset = w.segs[0].off
	}
}

func (w *waiter) result() ReadResult {
	r := w.res
	r.Data = string(w.text)
	r.Running, r.ExitCode = w.s.state()
	return r
}

// Read returns up to maxBytes (0 means DefaultReadBytes) of output from
// offset since. Unless raw, escape sequences are stripped (see ReadResult)
// and a sequence cut off at the end is left for the next read (Next stops
// before it), unless it alone fills maxBytes. Bytes no longer kept are
// skipped and counted in Skipped.
func (s *Session) Read(since int64, raw bool, maxBytes int) (ReadResult, error) {
	r, err := readText(s.stream.Read, since, raw, maxBytes)
	if errors.Is(err, ErrInvalid) {
		return ReadResult{}, err
	}
	if err != nil {
		return ReadResult{}, fmt.Errorf("session_id %s: read: %w", s.id, err)
	}
	r.Running, r.ExitCode = s.state()
	return r, nil
}

// lineStartAt tells whether the text before offset off ends a line.
func (s *Session) lineStartAt(off int64) bool { return lineStartAt(s.stream.Read, off) }

// Screen returns the terminal screen as the emulator renders it now,
// including all output read so far.
func (s *Session) Screen() Screen {
	s.emuMu.Lock()
	defer s.emuMu.Unlock()
	s.feedLocked() // a held session's output in its file, not yet followed
	w, h := s.emu.Width(), s.emu.Height()
	lines := make([]string, h)
	var b strings.Builder
	for y := 0; y < h; y++ {
		b.Reset()
		for x := 0; x < w; x++ {
			c := s.emu.CellAt(x, y)
			switch {
			case c == nil:
				b.WriteByte(' ')
			case c.IsZero(): // the second column of a wide character
			case c.Content == "":
				b.WriteByte(' ')
			default:
				b.WriteString(c.Content)
			}
		}
		lines[y] = strings.TrimRight(b.String(), " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	pos := s.emu.CursorPosition()
	return Screen{
		Text:      strings.Join(lines, "\n"),
		CursorRow: pos.Y, CursorCol: pos.X,
		Cols: w, Rows: h,
		AltScreen: s.emu.IsAltScreen(),
	}
}

// Resize sets the terminal size: the kernel sends SIGWINCH to the
// foreground program, and the emulator's screen follows. Sizes are 1..MaxSize.
func (s *Session) Resize(cols, rows int) error {
	if err := checkSize(cols, rows); err != nil {
		return err
	}
	if err := s.usable(); err != nil {
		return err
	}
	s.emuMu.Lock()
	defer s.emuMu.Unlock()
	// The emulator first, under the lock the reader takes: output the
	// program draws for the new size is fed to a screen of that size.
	s.screen.resize(s.emu, cols, rows)
	s.mu.Lock()
	s.cols, s.rows = cols, rows
	s.mu.Unlock()
	rc, err := s.master.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
		})
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("session_id %s: resize: %w", s.id, err)
	}
	return nil
}

// Close ends the session: SIGHUP (and SIGCONT) to the process's group and
// the terminal's foreground group, as a terminal hangup does; up to 1 s for
// the process to exit (it gets SIGHUP again meanwhile; no wait if it
// ignores SIGHUP); then SIGKILL to every process still in the session
// (found through /proc on Linux; elsewhere the process group only). It
// reaps the process, waits for the last output, closes the pty and the
// output stream, records the session closed (with a Store), and removes
// the session from its manager. It returns after the session's goroutines
// have ended. It is idempotent and safe to call concurrently; the output
// stays readable.
func (s *Session) Close() error { return s.end(StateClosed) }

// end is Close, recorded with state (StateClosed or StateInterrupted) if
// this call is the one that closes the session.
func (s *Session) end(state string) error {
	s.closeOnce.Do(func() { s.close(state) })
	return nil
}

func (s *Session) close(state string) {
	close(s.closing)
	reaped := false
	select {
	case <-s.exited:
		reaped = true
	default:
		s.hangup()
		if hangupIgnored(s.pid) {
			break // it will not exit on the hangup: no grace to wait out
		}
		reaped = s.awaitHangup()
	}
	killSession(s.pid, reaped)
	if s.held != nil {
		select {
		case <-s.exited:
		case <-s.held.released:
			// The manager let its sessions go (hive restart) while this
			// one was closing: the holder keeps it, and the next daemon
			// adopts what is left of it.
			s.master.Close()
			return
		}
	} else {
		<-s.exited
	}

	if s.held != nil {
		// The holder takes the last output and closes its master; the
		// follower feeds the screen to the end.
		st, err := s.m.opts.Holder.ClosePTY(s.id)
		s.stream.Stats() // what the file holds, should the holder not say
		if err == nil {
			st.Closed = true
			s.stream.Advance(st)
		} else {
			s.stream.Advance(output.Stats{Closed: true})
		}
		<-s.readerDone
		s.master.Close()
	} else {
		t := time.NewTimer(drainGrace)
		select {
		case <-s.readerDone:
		case <-t.C:
		}
		t.Stop()
		s.master.Close() // ends the reader if a process outside the session holds the terminal
		<-s.readerDone
	}

	if s.replies != nil {
		s.replies.CloseWithError(io.EOF)
	}
	<-s.repliesDone
	s.stream.Release()
	// Closed is recorded only now that nothing of the session is left, so
	// a record never says closed while a process of it may still run.
	s.mu.Lock()
	s.endedAt, s.endState = time.Now(), state
	s.mu.Unlock()
	<-s.waitDone
	s.record(false)
	s.m.remove(s)
	if s.held != nil {
		s.m.sup.AckWhenRecorded(s.id)
	}
}

// awaitHangup waits up to closeGrace for the process to exit after the
// hangup and reports whether it did (it is reaped then: from now on its
// pid may be someone else's). A shell can miss a hangup: bash defers a
// SIGHUP that comes while it finishes a command (the moment a fast client
// closes, right after the output it waited for) and then waits for input
// as if none had come. So the process gets SIGHUP again, after rehupFirst
// and then at doubling intervals; through its os.Process, which signals
// nobody once it is reaped.
func (s *Session) awaitHangup() bool {
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	d := rehupFirst
	again := time.NewTimer(d)
	defer again.Stop()
	for {
		select {
		case <-s.exited:
			return true
		case <-grace.C:
			return false
		case <-again.C:
			if s.cmd != nil {
				s.cmd.Process.Signal(syscall.SIGHUP)
			} else {
				syscall.Kill(s.pid, syscall.SIGHUP) // held: the holder reaps it, and tells (exited) at once
			}
			d *= 2
			again.Reset(d)
		}
	}
}

// hangup signals what a terminal hangup signals: the session leader's
// group and the foreground group get SIGHUP, then SIGCONT so stopped jobs
// see it.
func (s *Session) hangup() {
	groups := []int{s.pid}
	if rc, err := s.master.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if pg, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil && pg > 0 && pg != s.pid {
				groups = append(groups, pg)
			}
		})
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGCONT} {
		for _, pg := range groups {
			syscall.Kill(-pg, sig)
		}
	}
}
