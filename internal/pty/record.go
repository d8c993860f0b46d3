package pty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hivetools/hive/internal/ident"
	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
	"github.com/hivetools/hive/internal/store"
)

// recoverGrace is how long Recover gives the processes it terminates
// between SIGTERM and SIGKILL: Close's grace.
const recoverGrace = time.Second

// isRecorded tells whether the store has a record with id.
func (m *Manager) isRecorded(id string) (bool, error) {
	if m.opts.Store == nil {
		return false, nil
	}
	_, err := m.opts.Store.GetPTY(context.Background(), id)
	switch {
	case err == nil:
		return true, nil
	case store.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

// findRecord returns the record of a session by id, else the newest by
// name. A store that fails to answer is as good as no record.
func (m *Manager) findRecord(idOrName string) (store.PTY, bool) {
	st := m.opts.Store
	if st == nil || idOrName == "" {
		return store.PTY{}, false
	}
	ctx := context.Background()
	rec, err := st.GetPTY(ctx, idOrName)
	if err != nil && store.IsNotFound(err) && ident.ValidName(idOrName) {
		rec, err = st.LastPTYNamed(ctx, idOrName)
	}
	if err != nil {
		if !store.IsNotFound(err) {
			m.opts.Logger.Error("could not read pty session records", "session", idOrName, "err", err)
		}
		return store.PTY{}, false
	}
	return rec, true
}

// endedErr is Get's error for a recorded session that is not open.
type endedErr struct{ msg string }

func (e *endedErr) Error() string { return e.msg }
func (e *endedErr) Unwrap() error { return ErrEnded }

// endedError says what became of the recorded session asked as asked.
func endedError(asked string, rec store.PTY) error {
	what := fmt.Sprintf("session_id %q", asked)
	if asked != rec.ID {
		what += " (" + rec.ID + ")"
	}
	var how string
	switch rec.State {
	case StateInterrupted:
		how = fmt.Sprintf("the session ended when the daemon stopped (interrupted at %s)", clock(rec.Ended))
	case StateClosed:
		how = fmt.Sprintf("the session was closed at %s", clock(rec.Ended))
		if rec.ExitCode != nil {
			how += fmt.Sprintf(" (exit code %d)", *rec.ExitCode)
		}
	default: // a dead daemon's record that Recover has not seen yet
		how = fmt.Sprintf("the session is not open here: the daemon that ran it stopped with it %s", rec.State)
	}
	where := "; its output was kept in memory only"
	if rec.OutputPath != "" {
		where = "; its output is in " + rec.OutputPath
	}
	return &endedErr{what + ": " + how + where}
}

// clock formats t for a message: the time of day, with the date unless it
// is today.
func clock(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	now := time.Now()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format(time.TimeOnly)
	}
	return t.Format(time.DateTime)
}

// Recover ends what a daemon that stopped without closing its sessions
// (a crash, kill -9) left of them: every session the store records open
// or exited becomes interrupted, ended now, with its byte count taken
// from its output file if that holds more. Their processes are
// terminated (SIGTERM, 1 s, then SIGKILL), but only those proven to be
// theirs: a session's leader by its recorded pid and start time (and,
// while that leader lives, the processes of its session), any other
// process by the session's marks (HIVE_PTY_ID=<id> and
// HIVE_JOB_OWNER=Owner in its environment; see Options.Owner). Nothing is
// ever signalled by a bare pid or group that could have been reused.
//
// Call it once, before the first Open: it takes every open record for a
// dead daemon's. It returns within about two seconds plus a scan of the
// process table, and how many sessions it marked interrupted. Processes
// are terminated before records are written, so a store that fails
// leaves nothing running; the records then stay for the next Recover. It
// does nothing without a Store.
func (m *Manager) Recover(ctx context.Context) (int, error) {
	st := m.opts.Store
	if st == nil {
		return 0, nil
	}
	left, err := st.ListPTYs(ctx, StateOpening, StateOpen, StateExited)
	if err != nil {
		return 0, fmt.Errorf("recover pty sessions: %w", err)
	}
	if m.opts.Holder != nil {
		left = m.adoptHeld(left)
	}
	if len(left) == 0 {
		return 0, nil
	}
	if n := terminateSessions(left, m.opts.Owner); n > 0 {
		m.opts.Logger.Info("terminated processes of pty sessions of a previous daemon", "count", n)
	}
	now := time.Now()
	var errs []error
	for _, rec := range left {
		rec.State = StateInterrupted
		rec.Ended = now
		if rec.OutputPath != "" {
			if fi, err := os.Lstat(rec.OutputPath); err == nil && fi.Mode().IsRegular() && fi.Size() > rec.Bytes {
				rec.Bytes = fi.Size()
			}
		}
		if err := st.PutPTY(ctx, rec); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return len(left) - len(errs), fmt.Errorf("recover pty sessions: %w", err)
	}
	return len(left), nil
}

// terminateSessions terminates the processes proven to belong to the
// recorded sessions (see Recover) and returns how many there were.
func terminateSessions(recs []store.PTY, owner string) int {
	var targets []proc.Pinned
	seen := map[int]bool{}
	leaders := map[int]uint64{} // session id → start time of its leader, proven alive
	ids := map[string]bool{}
	for _, rec := range recs {
		ids[rec.ID] = true
		// An exited record's leader was reaped: its pid proves nothing.
		// So does one of another boot: start times count from the boot.
		if rec.State != StateOpen || rec.Pid <= 0 || rec.PidStart == 0 || proc.BootID() == "" || rec.BootID != proc.BootID() {
			continue
		}
		if p, ok := proc.Pin(rec.Pid, func(s proc.Stat) bool { return s.Start == rec.PidStart && s.Session == rec.Pid }); ok {
			targets = append(targets, p)
			seen[p.Pid] = true
			leaders[rec.Pid] = rec.PidStart
		}
	}
	self := os.Getpid()
	ownerMark := EnvOwner + "=" + owner
	for _, cand := range proc.Live(func(s proc.Stat) bool { return s.Pid != self && !seen[s.Pid] }) {
		p, ok := proc.Pin(cand.Pid, func(s proc.Stat) bool {
			// A member of a proven leader's session is the session's if
			// the leader still holds its pid after s was read: the
			// session id was then the leader's own, not a reused number.
			if start, ok := leaders[s.Session]; ok {
				if l, ok := proc.Read(s.Session); ok && l.Start == start {
					return true
				}
			}
			if owner == "" || !proc.HasEnv(s.Pid, ownerMark) {
				return false
			}
			id, ok := proc.Getenv(s.Pid, EnvID)
			return ok && ids[id]
		})
		if ok {
			targets = append(targets, p)
		}
	}
	if len(targets) == 0 {
		return 0
	}
	return proc.Terminate(targets, recoverGrace)
}

// ReadEnded reads the output of a session that is no longer open from its
// output file, as Read does (the same offsets; Running is false, ExitCode
// the recorded one, EOF at the end). The session is found as Get finds
// recorded ones; an unknown one gives ErrNotFound. Bytes not in the file
// (past its cap, or output kept in memory only) are counted in Skipped.
func (m *Manager) ReadEnded(idOrName string, since int64, raw bool, maxBytes int) (ReadResult, error) {
	rec, ok := m.findRecord(idOrName)
	if !ok {
		return ReadResult{}, fmt.Errorf("session_id %q: no pty session has this id or name: %w", idOrName, ErrNotFound)
	}
	var f *os.File
	var size int64
	if rec.OutputPath != "" {
		var err error
		f, err = paths.OpenFile(rec.OutputPath, os.O_RDONLY)
		switch {
		case err == nil:
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return ReadResult{}, fmt.Errorf("session_id %s: output file: %w", rec.ID, err)
			}
			size = fi.Size()
		case errors.Is(err, os.ErrNotExist): // no output, or it was removed
		default:
			return ReadResult{}, fmt.Errorf("session_id %s: %w", rec.ID, err)
		}
	}
	total := max(rec.Bytes, size)
	read := func(off int64, n int) (output.Chunk, error) {
		if off >= size {
			// Past the file: what is left was not kept.
			c := output.Chunk{Offset: total, Next: total, EOF: true}
			if off < total {
				c.Skipped = total - off
			}
			return c, nil
		}
		end := min(off+int64(n), size)
		buf := make([]byte, end-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return output.Chunk{}, fmt.Errorf("read output file %q at %d: %w", rec.OutputPath, off, err)
		}
		return output.Chunk{Data: buf, Offset: off, Next: end, EOF: end == total}, nil
	}
	r, err := readText(read, since, raw, maxBytes)
	if errors.Is(err, ErrInvalid) {
		return ReadResult{}, err
	}
	if err != nil {
		return ReadResult{}, fmt.Errorf("session_id %s: read: %w", rec.ID, err)
	}
	r.ExitCode = rec.ExitCode
	return r, nil
}

// Prune deletes the records of sessions that ended before t, with their
// output files, and returns how many. A file is removed only where this
// Manager puts it (Dir/<id>.pty) and while no session of that id is open
// or being opened. It does nothing without a Store.
func (m *Manager) Prune(ctx context.Context, before time.Time) (int, error) {
	st := m.opts.Store
	if st == nil {
		return 0, nil
	}
	const batch = 64 // files are removed under m.mu: keep each hold short
	n := 0
	for {
		old, err := st.DeletePTYsEndedBefore(ctx, before, batch)
		if err != nil {
			return n, fmt.Errorf("prune pty sessions: %w", err)
		}
		m.mu.Lock()
		for _, rec := range old {
			if m.opts.Dir == "" || rec.OutputPath != filepath.Join(m.opts.Dir, rec.ID+".pty") {
				continue
			}
			if m.sessions[rec.ID] == nil && !m.reserved[rec.ID] {
				os.Remove(rec.OutputPath)
			}
		}
		m.mu.Unlock()
		n += len(old)
		if len(old) < batch {
			return n, nil
		}
	}
}
