//go:build unix

package pty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/vt"
	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/supervise"
)

// --- the holder's half ---

// HeldPTY is a session's process as a holder runs it.
type HeldPTY struct {
	Spec     wire.PTYSpec
	Pid      int
	PidStart uint64
	TTY      string
	cmd      *exec.Cmd
	master   *os.File
	stream   *output.Stream
	readDone chan struct{}
	once     sync.Once
}

// StartHeld starts spec's process on a new pty; its output is copied into
// spec.Output, and wrote called after each write.
func StartHeld(spec wire.PTYSpec, wrote func()) (*HeldPTY, error) {
	if spec.ID == "" || spec.Path == "" || len(spec.Argv) == 0 || spec.Output == "" {
		return nil, errors.New("pty spawn: id, path, argv and output are required")
	}
	if err := checkSize(spec.Cols, spec.Rows); err != nil {
		return nil, err
	}
	defaultHangup()
	st, err := output.Create(spec.Output, &output.Options{FileCap: spec.FileCap, NoRing: true})
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: spec.Path, Args: spec.Argv, Env: spec.Env, Dir: spec.Dir}
	master, tty, err := startPTY(cmd, spec.Cols, spec.Rows)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("pty spawn: start: %w", err)
	}
	h := &HeldPTY{Spec: spec, Pid: cmd.Process.Pid, TTY: tty, cmd: cmd, master: master, stream: st, readDone: make(chan struct{})}
	if ps, ok := proc.Read(h.Pid); ok {
		h.PidStart = ps.Start
	}
	go func() {
		defer close(h.readDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				st.Write(buf[:n])
				if wrote != nil {
					wrote()
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return h, nil
}

// Master is the pty's master side (the holder's).
func (h *HeldPTY) Master() *os.File { return h.master }

// Stats are the output's counters.
func (h *HeldPTY) Stats() output.Stats { return h.stream.Stats() }

// Wait reaps the process and returns its exit code (128+n for signal n).
func (h *HeldPTY) Wait() int {
	proc.Wait(h.cmd)
	return exitCode(h.cmd.ProcessState)
}

// Close takes the last output (up to drainGrace for a process outside
// the session that still holds the terminal), closes the master and the
// file, and returns the output's counters.
func (h *HeldPTY) Close() output.Stats {
	h.once.Do(func() {
		t := time.NewTimer(drainGrace)
		select {
		case <-h.readDone:
		case <-t.C:
		}
		t.Stop()
		h.master.Close()
		<-h.readDone
		h.stream.Close()
	})
	return h.stream.Stats()
}

// --- the manager's half ---

// heldState is what a held session has of its holder.
type heldState struct {
	exit      chan int      // the process's exit code, once
	replaying atomic.Bool   // the terminal's answers to a replay are dropped, up to replayDone
	fed       int64         // output bytes given to the emulator; under emuMu
	released  chan struct{} // the manager let the session go (Release)
}

// replayDone ends the answers of a replay in the emulator's answer pipe.
const replayDone = "\x00hive-replayed\x00"

// startHeld starts a session in the holder: see start.
func startHeld(m *Manager, id string, o OpenOptions, cmd *exec.Cmd, cmdText, cwd, path string, by limits.Enforced) (*Session, error) {
	if path == "" {
		return nil, errors.New("open pty session: a held session needs an output file (Options.Dir)")
	}
	if st := m.opts.Store; st != nil {
		if err := st.PutPTY(context.Background(), store.PTY{ID: id, Name: o.Name, Cmd: cmdText, Cwd: cwd, Cols: o.Cols, Rows: o.Rows,
			State: StateOpening, Started: time.Now(), OutputPath: path, BootID: proc.BootID()}); err != nil {
			return nil, fmt.Errorf("open pty session: %w: nothing was started: %w", ErrNotRecorded, err)
		}
	}
	dir := cmd.Dir
	if dir == "" {
		dir = cwd
	}
	h := m.opts.Holder
	x, err := h.SpawnPTY(wire.PTYSpec{ID: id, Path: cmd.Path, Argv: cmd.Args, Env: cmd.Env, Dir: dir, Cols: o.Cols, Rows: o.Rows,
		Output: path, FileCap: m.opts.FileCap})
	var master *os.File
	if err == nil {
		if master, err = h.MasterPTY(id); err != nil {
			h.ClosePTY(id) // nothing of it stays: it exits on the hangup of its terminal
		}
	}
	if err != nil {
		if st := m.opts.Store; st != nil {
			st.DeletePTY(context.Background(), id)
		}
		return nil, fmt.Errorf("open pty session: start %q: %w", cmdText, err)
	}
	s := newHeldSession(m, store.PTY{ID: id, Name: o.Name, Cmd: cmdText, Cwd: cwd, Pid: x.Pid, PidStart: x.PidStart,
		Cols: o.Cols, Rows: o.Rows, Started: time.Now(), OutputPath: path}, master, x.TTY, output.Stats{})
	s.limitsBy = by
	s.startHeldGoroutines(false)
	if err := s.record(true); err != nil {
		s.Close()
		os.Remove(path)
		return nil, fmt.Errorf("open pty session: %w, so its process was killed: %w", ErrNotRecorded, err)
	}
	return s, nil
}

// newHeldSession makes the Session of a held session.
func newHeldSession(m *Manager, rec store.PTY, master *os.File, tty string, at output.Stats) *Session {
	emu := vt.NewEmulator(rec.Cols, rec.Rows)
	emu.SetScrollbackSize(scrollbackLines)
	replies, _ := emu.InputPipe().(*io.PipeWriter)
	return &Session{
		m: m, id: rec.ID, name: rec.Name, cmdText: rec.Cmd, cwd: rec.Cwd, started: rec.Started,
		pid: rec.Pid, pidStart: rec.PidStart, master: master, tty: tty,
		stream: output.Follow(rec.OutputPath, m.opts.FileCap, at), emu: emu, replies: replies,
		cols: rec.Cols, rows: rec.Rows,
		exited: make(chan struct{}), waitDone: make(chan struct{}), readerDone: make(chan struct{}),
		repliesDone: make(chan struct{}), closing: make(chan struct{}),
		held: &heldState{exit: make(chan int, 1), released: m.released},
	}
}

// startHeldGoroutines starts what a held session runs; replay feeds the
// output so far to the screen first, its terminal answers dropped (they
// were answered when the output first came).
func (s *Session) startHeldGoroutines(replay bool) {
	s.held.replaying.Store(replay)
	go s.pumpReplies()
	if replay {
		s.feed()
		s.replies.Write([]byte(replayDone)) // after every answer of the replay
	}
	go s.waitHeld()
	go s.followHeld()
}

// heldReplies is what of an answer chunk goes to the program: none
// while a replay's answers come.
func (s *Session) heldReplies(p []byte) []byte {
	if s.held == nil || !s.held.replaying.Load() {
		return p
	}
	i := bytes.Index(p, []byte(replayDone))
	if i < 0 {
		return nil
	}
	s.held.replaying.Store(false)
	return p[i+len(replayDone):]
}

// feed gives the emulator the output it has not had yet.
func (s *Session) feed() {
	s.emuMu.Lock()
	defer s.emuMu.Unlock()
	s.feedLocked()
}

func (s *Session) feedLocked() {
	if s.held == nil {
		return
	}
	for {
		c, err := s.stream.Read(s.held.fed, 256<<10)
		if err != nil || (len(c.Data) == 0 && c.Next == s.held.fed) {
			return
		}
		if len(c.Data) > 0 {
			s.feedScreenLocked(c.Data)
		}
		s.held.fed = c.Next
	}
}

// followHeld feeds the screen as the holder's output arrives, until the
// stream is closed (Close) or the manager lets the session go.
func (s *Session) followHeld() {
	defer close(s.readerDone)
	for {
		ch := s.stream.Changed()
		s.feed()
		if s.stream.Stats().Closed {
			s.feed()
			return
		}
		select {
		case <-ch:
		case <-s.held.released:
			return
		}
	}
}

// waitHeld waits for the holder to tell the exit code: see wait.
func (s *Session) waitHeld() {
	defer close(s.waitDone)
	select {
	case code := <-s.held.exit:
		s.exitedWith(code)
	case <-s.held.released:
	}
}

// heldPending tells whether output is in the file but not yet on the screen.
func (s *Session) heldPending() bool {
	if s.held == nil {
		return false
	}
	total := s.stream.Stats().Total
	s.emuMu.Lock()
	defer s.emuMu.Unlock()
	return s.held.fed < total
}

// PTYProgress tells the manager a held session's output count.
func (m *Manager) PTYProgress(id string, at output.Stats) {
	if s := m.session(id); s != nil && s.held != nil {
		s.stream.Advance(at)
	}
}

// PTYExited tells the manager a held session's process exited (see
// supervise.Core.Ended).
func (m *Manager) PTYExited(id string, code int) { m.sup.Ended(id, code) }

// PTYHolderLost tells the manager that its holder died: its sessions'
// processes are terminated (proven by their marks) and they end
// interrupted.
func (m *Manager) PTYHolderLost() { m.sup.Lost() }

// PTYResync catches up with the holder after its connection was replaced
// (events may have been lost): exits and output counts are told again. A
// session the holder runs that this manager neither holds nor is opening
// (a spawn whose answer was lost with the connection, after Open gave up
// on it) has its terminal closed, as at Recover. See
// supervise.Core.Resync.
func (m *Manager) PTYResync() { m.sup.Resync() }

// heldKind is what the PTY manager plugs into its supervise.Core.
type heldKind struct{ m *Manager }

func newSupervisor(m *Manager) *supervise.Core[*Session, wire.PTYSession, int] {
	return supervise.New(heldKind{m}, supervise.Options{What: "pty session", Logger: m.opts.Logger})
}

func (k heldKind) List() ([]wire.PTYSession, error) { return k.m.opts.Holder.HeldPTYs() }
func (heldKind) ID(x wire.PTYSession) string        { return x.ID }
func (heldKind) End(x wire.PTYSession) (int, bool)  { return x.ExitCode, x.Exited }

// Standing: a session of the manager is held (with a holder, every one
// is); one being opened is starting.
func (k heldKind) Standing(id string) supervise.Standing {
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	switch {
	case k.m.sessions[id] != nil:
		return supervise.Held
	case k.m.reserved[id]:
		return supervise.Starting
	}
	return supervise.Unknown
}

func (k heldKind) Progress(x wire.PTYSession) { k.m.PTYProgress(x.ID, x.Output) }

func (k heldKind) Tell(id string, code int) supervise.Told {
	s := k.m.session(id)
	switch {
	case s == nil:
		return supervise.NotOurs // closed, or never handed out
	case s.held == nil:
		return supervise.Taken // not the holder's: nothing of it to tell
	}
	select {
	case s.held.exit <- code:
	default: // told again: once is enough
	}
	return supervise.Taken
}

// Stop closes a stray session's terminal: it exits on the hangup.
func (k heldKind) Stop(id string) error {
	_, err := k.m.opts.Holder.ClosePTY(id)
	return err
}

func (k heldKind) Drop(id string) { k.m.opts.Holder.ClosePTY(id) }

// Recorded: a session's records are written before it is acked (close).
func (heldKind) Recorded(_ string, then func()) { then() }

func (k heldKind) Ack(id string) error { return k.m.opts.Holder.AckPTY(id) }

func (k heldKind) Supervised() (held, flight []*Session) {
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	for _, s := range k.m.sessions {
		if s.held != nil {
			held = append(held, s)
		}
	}
	return held, nil
}

func (k heldKind) Terminate(held, _ []*Session) int {
	recs := make([]store.PTY, len(held))
	for i, s := range held {
		recs[i] = s.snapshot()
	}
	return terminateSessions(recs, k.m.opts.Owner)
}

func (heldKind) Interrupt(s *Session) {
	s.stream.Advance(output.Stats{Closed: true})
	select {
	case s.held.exit <- 128 + 9:
	default:
	}
	go s.end(StateInterrupted)
}

func (m *Manager) session(id string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[id]
}

// adoptHeld adopts the sessions of recs (the records a daemon left open)
// that the holder still holds, and returns the others. What the holder
// holds with no such record is closed (see supervise.Core.Adopt).
func (m *Manager) adoptHeld(recs []store.PTY) []store.PTY {
	h := m.opts.Holder
	open := make(map[string]store.PTY, len(recs))
	for _, rec := range recs {
		if rec.State != StateOpening && rec.OutputPath != "" {
			open[rec.ID] = rec
		}
	}
	adopted := map[string]bool{}
	err := m.sup.Adopt(func(x wire.PTYSession, early *int) bool {
		rec, ok := open[x.ID]
		if !ok {
			return false
		}
		master, err := h.MasterPTY(rec.ID)
		if err != nil {
			// Its master is gone (a close had begun): it ends as
			// interrupted, and the holder forgets it once it exited.
			m.opts.Logger.Error("could not take over a held session", "session", rec.ID, "err", err)
			return false
		}
		if rec.Pid == 0 {
			rec.Pid, rec.PidStart = x.Pid, x.PidStart
		}
		// The terminal's size now (a resize is not recorded): the screen
		// is replayed at it.
		if ws, err := winsize(master); err == nil && ws.Col > 0 && ws.Row > 0 {
			rec.Cols, rec.Rows = int(ws.Col), int(ws.Row)
		}
		s := newHeldSession(m, rec, master, x.TTY, x.Output)
		s.setUp.Store(true) // its program had its terminal long before
		if rec.ExitCode != nil {
			c := *rec.ExitCode
			s.exitRecord = &c
			s.exitedAt = rec.Exited
		}
		m.mu.Lock()
		m.sessions[rec.ID] = s
		m.mu.Unlock()
		s.recorded = true
		code, ended := 0, false
		if early != nil {
			code, ended = *early, true
		}
		if x.Exited {
			code, ended = x.ExitCode, true
		}
		if ended {
			select { // the end may come as an event too
			case s.held.exit <- code:
			default:
			}
		}
		s.startHeldGoroutines(true)
		adopted[rec.ID] = true
		m.opts.Logger.Info("adopted a pty session the holder kept", "session", rec.ID)
		return true
	})
	if err != nil {
		m.opts.Logger.Error("could not list the sessions the holder holds", "err", err)
		return recs
	}
	var rest []store.PTY
	for _, rec := range recs {
		if !adopted[rec.ID] {
			rest = append(rest, rec)
		}
	}
	return rest
}

// Release lets the sessions go without ending them: the holder keeps
// them for the next daemon. Later Opens fail with ErrClosed. Without a
// Holder it is Close.
func (m *Manager) Release() error {
	if m.opts.Holder == nil {
		return m.Close()
	}
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.opening.Wait()
	m.releaseOnce.Do(func() { close(m.released) })
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	for _, s := range ss {
		if s.held == nil {
			s.end(StateInterrupted)
			continue
		}
		<-s.waitDone
		<-s.readerDone
		s.replies.CloseWithError(io.EOF)
		<-s.repliesDone
		s.master.Close()
		s.stream.Advance(output.Stats{Closed: true})
		s.stream.Release() // its read descriptor
	}
	return nil
}

// winsize is the terminal size of a pty master.
func winsize(master *os.File) (*unix.Winsize, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return nil, err
	}
	var ws *unix.Winsize
	var werr error
	if err := rc.Control(func(fd uintptr) { ws, werr = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) }); err != nil {
		return nil, err
	}
	return ws, werr
}

// Kill ends what is left of the session's processes (the holder's stop).
func (h *HeldPTY) Kill() { killSession(h.Pid, false) }
