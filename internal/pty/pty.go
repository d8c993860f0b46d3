// Package pty runs persistent interactive sessions on pseudo-terminals: a
// shell (or any program) that keeps its state between calls, behind the
// terminal_pty_* tools.
//
// Each session owns one child process started in its own session with the
// pty as its controlling terminal. Everything the child prints goes, in
// order, to an output stream (see package output: absolute offsets, a
// memory ring, a file under Options.Dir) and to a terminal emulator that
// renders the current screen. Terminal queries the child sends (cursor
// position, device attributes) are answered by the emulator, so programs
// that ask the terminal about itself do not hang.
//
// A Manager owns its sessions and every goroutine they run; Manager.Close
// returns only after all of them have ended. Sessions are POSIX-only: on
// Windows every Open fails with ErrUnsupported.
//
// With a store (Options.Store) every session is recorded, so a daemon
// that restarts after a crash knows the sessions the dead one left
// (Manager.Recover ends them and their processes) and can tell a client
// what became of a session it asks for (Get's ErrEnded, ReadEnded).
package pty

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hivetools/hive/internal/errdefs"
	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/ident"
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/store"
	"github.com/hivetools/hive/internal/supervise"
	"github.com/hivetools/hive/internal/view"
)

// Errors returned by this package. Test with errors.Is.
var (
	// ErrNotFound: no open session has the asked id or name.
	ErrNotFound = errdefs.New(errdefs.ErrNotFound, "pty session not found")
	// ErrClosed: the session (or the manager) has been closed.
	ErrClosed = errdefs.New(errdefs.ErrConflict, "pty session closed")
	// ErrExited: the session's process has exited; it takes no more input.
	ErrExited = errdefs.New(errdefs.ErrConflict, "pty session process exited")
	// ErrInvalid: an argument breaks its rule; the message names the field.
	ErrInvalid = errdefs.ErrInvalid
	// ErrLimit: the manager already holds MaxSessions sessions.
	ErrLimit = errdefs.New(errdefs.ErrLimit, "too many pty sessions")
	// ErrUnsupported: PTY sessions cannot run on this platform (Windows).
	ErrUnsupported = errors.New("PTY sessions are unsupported on this platform")
	// ErrEnded: the session is not open, but the store has its record: it
	// was closed, or it ended with the daemon that ran it. The message says
	// which, when, and where its output is.
	ErrEnded = errdefs.New(errdefs.ErrConflict, "pty session ended")
	// ErrNotRecorded: the store could not record a new session, so none was
	// started (a process that had started is killed and reaped).
	ErrNotRecorded = errors.New("pty session could not be recorded")
)

// Environment variables that mark every process of a session (see
// Options.Owner). EnvOwner is the job engine's owner mark (job.EnvJobOwner),
// so the engine's sweep of its owner's processes at start reaches sessions
// too.
const (
	EnvID    = "HIVE_PTY_ID"
	EnvOwner = "HIVE_JOB_OWNER"
	// envJobID is the job engine's job mark: a session started from inside
	// a job does not carry it on.
	envJobID = "HIVE_JOB_ID"
)

// States of a session record.
const (
	StateOpening     = "opening"     // recorded before its process starts
	StateOpen        = "open"        // the process runs
	StateExited      = "exited"      // the process exited; the session is not closed yet
	StateClosed      = "closed"      // Session.Close ended it
	StateInterrupted = "interrupted" // the daemon that ran it stopped: Manager.Close, or a crash (see Recover)
)

// Defaults.
const (
	// DefaultMaxSessions is the session limit when Options.MaxSessions is zero.
	DefaultMaxSessions = 32
	// DefaultCols and DefaultRows are the terminal size when OpenOptions
	// leaves it zero.
	DefaultCols = 120
	DefaultRows = 40
	// MaxSize is the largest accepted number of columns or rows.
	MaxSize = 1000
	// DefaultReadBytes is the read size when Read's maxBytes is zero.
	DefaultReadBytes = 256 << 10
	// MaxWaitBytes bounds the text SendWait returns; older text is left out
	// (see ReadResult.Offset) and stays readable with Read.
	MaxWaitBytes = 256 << 10
)

// defaultShell is what a session runs when OpenOptions.Cmd is empty.
const defaultShell = "bash --norc --noprofile"

// Options configures a Manager. The zero value is usable.
type Options struct {
	// Dir receives each session's output file, Dir/<id>.pty. The files stay
	// after Close; the caller owns Dir. If Dir is empty, output is kept in
	// memory only (the ring).
	Dir string
	// RingSize is the number of recent output bytes kept in memory per
	// session. If zero, output.DefaultRingSize (4 MiB) is used.
	RingSize int
	// FileCap caps each output file; later bytes are counted as dropped. If
	// zero, output.DefaultFileCap is used; negative means no cap.
	FileCap int64
	// MaxSessions limits the sessions open at once (running or exited but
	// not closed). If zero, DefaultMaxSessions is used.
	MaxSessions int
	// Owner, if set, marks the environment of every session with
	// HIVE_JOB_OWNER=Owner and HIVE_PTY_ID=<session id>, after
	// OpenOptions.Env so a client cannot override them (any such variable
	// of Env, and an inherited HIVE_JOB_ID, is dropped). Recover finds the
	// processes a dead daemon's sessions left by these marks, and so does
	// the job engine's sweep of its owner's processes. Use the state
	// directory. If empty, sessions are not marked.
	Owner string
	// Store, if set, records every session: when it opens (before Open
	// returns; if that fails, Open fails and leaves nothing running), when its
	// process exits and when it is closed. The caller owns the store and
	// closes it after Close. If nil, nothing is recorded, and Recover,
	// Prune and ReadEnded do nothing.
	Store *store.Store
	// Logger hears of record writes that failed where no caller waits
	// (exit, close) and of Recover's work. If nil, nothing is logged.
	Logger *slog.Logger
	// Holder, if set, runs the sessions' processes so that they outlive
	// the daemon (see Holder); Recover adopts the ones it holds. Needs Dir.
	Holder Holder
	// Limits are the defaults and ceilings of the sessions' resource
	// limits, as a job's (limits.Policy.Resolve: a request above a
	// ceiling is refused). The zero value limits nothing.
	Limits limits.Policy
	// NofileSoft, if set, gives the soft limit of open files of a session
	// whose rlimits leave nofile alone (limits.Rlimits.NofileSoft): the
	// one the spawner's children start with, as a job's (job.ChildNofile).
	// If nil, such a session gets the wrapper's, raised to its hard limit.
	NofileSoft func() uint64
}

// OpenOptions describes a new session.
type OpenOptions struct {
	// Cmd is run by bash -c; bash execs a single simple command, so the
	// session's process is then that program. If empty, the session runs
	// an interactive "bash --norc --noprofile".
	Cmd string
	// Cwd is the working directory. If empty, the daemon's.
	Cwd string
	// Env is the full environment. If nil, the daemon's environment is used
	// and TERM is set to xterm-256color (the emulator's type); an explicit
	// Env keeps its own TERM and gets xterm-256color only when it has none.
	// ZDOTDIR and ZSH_* are always removed, and SHELL is the policy shell
	// (shell.Default, which runs the session).
	Env []string
	// Cols and Rows are the terminal size. Zero means DefaultCols x
	// DefaultRows; otherwise 1..MaxSize.
	Cols, Rows int
	// Name is an optional handle, [a-z0-9-]{1,63}, unique among the open
	// sessions of the manager. Get accepts it in place of the id.
	Name string
	// Limits are the session's resource limits (with Options.Limits'
	// defaults): the session's process and all it starts get them as
	// rlimits (limits.Wrap), set before the shell runs; a session has no
	// cgroup, so cpus (no timeout) and pids for root are not enforced
	// (Info.LimitsBy says so). Zero: the defaults.
	Limits limits.Limits
}

// Info describes a session.
type Info struct {
	ID   string // "pty_" + 8 hex digits
	Name string
	Cmd  string // as given, or "bash --norc --noprofile"
	Cwd  string
	Pid  int // the session's process (also its session and process group id)
	Cols int
	Rows int
	// Running is false once the session's process has exited; background
	// processes it left behind may still write until Close. ExitCode is
	// set once the process has exited: its exit status, or 128+signal
	// when a signal killed it (like bash's $?).
	view.SessionState
	Started time.Time
	Bytes   int64 // output bytes so far
	// LimitsBy says how each of the session's limits is enforced (nil:
	// it has none, or it was opened by an earlier daemon).
	LimitsBy limits.Enforced
}

// View is the session as every surface shows it (package view).
func (i Info) View() view.Session {
	return view.Session{ID: i.ID, Name: i.Name, Cmd: i.Cmd, Pid: i.Pid, Cols: i.Cols, Rows: i.Rows,
		SessionState: i.SessionState, Started: view.Time(i.Started), Bytes: i.Bytes, LimitsEnforcedBy: i.LimitsBy}
}

// ReadResult is the answer of Read and SendWait.
type ReadResult struct {
	// Data is the output, with ANSI escape sequences and other control
	// characters (except \n, \t and a lone \r) removed and \r\n turned
	// into \n, unless raw was asked.
	Data string
	// Offset is the stream offset of the first byte behind Data; Next is
	// the offset to read from next.
	Offset, Next int64
	// Skipped counts asked-for bytes that are no longer kept anywhere.
	Skipped int64
	// Matched reports that SendWait's pattern matched.
	Matched bool
	// The session's state when the result was made.
	view.SessionState
	// EOF is true when the output has ended for good and Next is its end.
	EOF bool
}

// Screen is the rendered terminal screen.
type Screen struct {
	// Text holds the rows joined by \n, trailing spaces trimmed, trailing
	// blank rows left out. Row i of the screen is line i of Text. A wide
	// character takes one place in the line but two columns.
	Text string
	// CursorRow and CursorCol are 0-based: the top-left cell is 0,0.
	CursorRow, CursorCol int
	Cols, Rows           int
	// AltScreen is true while a full-screen program (less, vim) uses the
	// alternate screen.
	AltScreen bool
}

// Manager owns PTY sessions. It is safe for concurrent use.
type Manager struct {
	opts Options

	mu       sync.Mutex
	sessions map[string]*Session // by id
	reserved map[string]bool     // names and ids of sessions being opened
	pending  int                 // sessions being opened
	closed   bool
	opening  sync.WaitGroup // Opens in progress
	// sup decides about what the holder holds (nil without a holder
	// of sessions); released is closed by Release.
	sup         *supervise.Core[*Session, wire.PTYSession, int]
	released    chan struct{}
	releaseOnce sync.Once
}

// NewManager returns a Manager. It starts nothing until Open; with a
// Store, call Recover before the first Open.
func NewManager(o Options) *Manager {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: o, sessions: map[string]*Session{}, reserved: map[string]bool{}, released: make(chan struct{})}
	m.sup = newSupervisor(m)
	if l, ok := o.Holder.(interface{ ListenPTY(PTYSink) }); ok {
		l.ListenPTY(m) // before any session: none of its events is missed
	}
	return m
}

// Open starts a session. Bad options give an error wrapping ErrInvalid that
// names the field; a full manager gives ErrLimit; a closed one ErrClosed; a
// store that cannot record the session ErrNotRecorded (nothing is left
// running then).
func (m *Manager) Open(o OpenOptions) (*Session, error) {
	if o.Name != "" {
		if err := ident.CheckName("name", o.Name); err != nil {
			return nil, err
		}
	}
	lim, err := m.opts.Limits.Resolve(o.Limits)
	if err != nil {
		return nil, err // of ErrInvalid, naming the field: limits.memory_mb 1024: above...
	}
	o.Limits = lim
	if o.Cols == 0 {
		o.Cols = DefaultCols
	}
	if o.Rows == 0 {
		o.Rows = DefaultRows
	}
	if err := checkSize(o.Cols, o.Rows); err != nil {
		return nil, err
	}
	if o.Cwd != "" {
		st, err := os.Stat(o.Cwd)
		if err != nil {
			return nil, fmt.Errorf("cwd %q: %w: %w", o.Cwd, err, ErrInvalid)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("cwd %q: not a directory: %w", o.Cwd, ErrInvalid)
		}
	}

	var id string
	for id == "" {
		// An id is new if no open session and no record has it: a
		// recorded id keeps its output file and its answers (ErrEnded).
		cand := newID()
		if recorded, err := m.isRecorded(cand); err != nil {
			return nil, fmt.Errorf("open pty session: %w: nothing was started: %w", ErrNotRecorded, err)
		} else if recorded {
			continue
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, fmt.Errorf("open pty session: manager: %w", ErrClosed)
		}
		if n := len(m.sessions) + m.pending; n >= m.opts.MaxSessions {
			m.mu.Unlock()
			return nil, fmt.Errorf("open pty session: %d sessions open, the limit: close one first: %w", n, ErrLimit)
		}
		if o.Name != "" && (m.reserved[o.Name] || m.byName(o.Name) != nil) {
			m.mu.Unlock()
			return nil, fmt.Errorf("name %q: already used by an open session: %w", o.Name, ErrInvalid)
		}
		if m.sessions[cand] == nil && !m.reserved[cand] {
			id = cand
		} else {
			m.mu.Unlock()
		}
	}
	m.reserved[id] = true
	if o.Name != "" {
		m.reserved[o.Name] = true
	}
	m.pending++
	m.opening.Add(1)
	m.mu.Unlock()
	defer m.opening.Done()

	s, err := start(m, id, o)

	m.mu.Lock()
	delete(m.reserved, id)
	delete(m.reserved, o.Name)
	m.pending--
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	if m.closed {
		m.mu.Unlock()
		s.end(StateInterrupted)
		return nil, fmt.Errorf("open pty session: manager: %w", ErrClosed)
	}
	m.sessions[id] = s
	m.mu.Unlock()
	return s, nil
}

func checkSize(cols, rows int) error {
	if cols < 1 || cols > MaxSize {
		return fmt.Errorf("cols %d: must be 1..%d: %w", cols, MaxSize, ErrInvalid)
	}
	if rows < 1 || rows > MaxSize {
		return fmt.Errorf("rows %d: must be 1..%d: %w", rows, MaxSize, ErrInvalid)
	}
	return nil
}

// newID returns a random id; Open checks that it is unused.
func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return "pty_" + hex.EncodeToString(b[:])
}

// byName finds an open session by name. m.mu is held.
func (m *Manager) byName(name string) *Session {
	for _, s := range m.sessions {
		if s.name == name {
			return s
		}
	}
	return nil
}

// Get returns the open session with this id or name. A session that is no
// longer open but recorded in the store (by id, or the newest of that
// name) gives an error wrapping ErrEnded that says what became of it; an
// unknown one gives an error wrapping ErrNotFound.
func (m *Manager) Get(idOrName string) (*Session, error) {
	m.mu.Lock()
	if s := m.sessions[idOrName]; s != nil {
		m.mu.Unlock()
		return s, nil
	}
	if idOrName != "" {
		if s := m.byName(idOrName); s != nil {
			m.mu.Unlock()
			return s, nil
		}
	}
	opening := m.reserved[idOrName]
	m.mu.Unlock()
	if !opening {
		if rec, ok := m.findRecord(idOrName); ok {
			return nil, endedError(idOrName, rec)
		}
	}
	return nil, fmt.Errorf("session_id %q: no open pty session has this id or name: %w", idOrName, ErrNotFound)
}

// List describes the open sessions, oldest first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	infos := make([]Info, len(ss))
	for i, s := range ss {
		infos[i] = s.Info()
	}
	sort.Slice(infos, func(i, j int) bool {
		if !infos[i].Started.Equal(infos[j].Started) {
			return infos[i].Started.Before(infos[j].Started)
		}
		return infos[i].ID < infos[j].ID
	})
	return infos
}

// remove forgets a closed session.
func (m *Manager) remove(s *Session) {
	m.mu.Lock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
	}
	m.mu.Unlock()
}

// Close closes every session, as Session.Close does but recorded
// interrupted (the daemon stops: the client did not close them), and makes
// later Opens fail with ErrClosed. It returns after every goroutine the manager's
// sessions started has ended. It is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	// An Open in flight sees closed when it finishes and closes its session.
	m.opening.Wait()

	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(ss))
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.end(StateInterrupted)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// marks returns the environment marks of session id (see Options.Owner),
// or nil without an owner.
func (m *Manager) marks(id string) []string {
	if m.opts.Owner == "" {
		return nil
	}
	return []string{EnvID + "=" + id, EnvOwner + "=" + m.opts.Owner}
}

// sessionEnv builds a child's environment (see OpenOptions.Env), with
// marks last. With marks, any variable of the mark names in env, and the
// job engine's job mark, are left out.
func sessionEnv(env []string, marks []string) []string {
	inherited := env == nil
	if inherited {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1+len(marks))
	hasTerm := false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "ZDOTDIR", strings.HasPrefix(k, "ZSH_"):
			continue
		case len(marks) > 0 && (k == EnvID || k == EnvOwner || k == envJobID):
			continue
		case k == "TERM":
			if inherited || v == "" {
				continue
			}
			hasTerm = true
		}
		out = append(out, kv)
	}
	if !hasTerm {
		out = append(out, "TERM=xterm-256color")
	}
	return append(out, marks...)
}
