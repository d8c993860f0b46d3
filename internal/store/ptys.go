package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// PTY is one PTY session record. The pty package owns the meaning of its
// fields; the store only keeps them.
type PTY struct {
	ID       string
	Name     string
	Cmd      string
	Cwd      string
	Pid      int
	PidStart uint64 // the process's start time as the OS reports it (Linux: clock ticks since boot)
	BootID   string // the boot PidStart counts from ("" if unknown): another boot's pid proves nothing
	Cols     int
	Rows     int
	State    string
	ExitCode *int
	Started  time.Time
	Exited   time.Time // when the session's process exited; zero while it runs
	Ended    time.Time // when the session ended; zero while it is open
	// OutputPath is the session's output file ("" when output was kept in
	// memory only); Bytes counts the output bytes, including any past the
	// file's cap.
	OutputPath string
	Bytes      int64
}

const ptyCols = `id, name, cmd, cwd, pid, pid_start, cols, rows, state, exit_code,
	started_at, exited_at, ended_at, output_path, bytes, boot_id`

// PutPTY inserts or replaces the record with p.ID.
func (s *Store) PutPTY(ctx context.Context, p PTY) error {
	_, err := s.db.ExecContext(ctx, `INSERT OR REPLACE INTO ptys (`+ptyCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		p.ID, p.Name, p.Cmd, p.Cwd, p.Pid, int64(p.PidStart), p.Cols, p.Rows, p.State, nullInt(p.ExitCode),
		unixMilli(p.Started), unixMilli(p.Exited), unixMilli(p.Ended), p.OutputPath, p.Bytes, p.BootID)
	if err != nil {
		return fmt.Errorf("put pty session %s: %w", p.ID, err)
	}
	return nil
}

// GetPTY returns the record with id, or an error wrapping ErrNotFound.
func (s *Store) GetPTY(ctx context.Context, id string) (PTY, error) {
	return s.onePTY(ctx, "pty session "+id, `SELECT `+ptyCols+` FROM ptys WHERE id = ?`, id)
}

// LastPTYNamed returns the newest record with this name, or an error
// wrapping ErrNotFound.
func (s *Store) LastPTYNamed(ctx context.Context, name string) (PTY, error) {
	return s.onePTY(ctx, fmt.Sprintf("pty session named %q", name),
		`SELECT `+ptyCols+` FROM ptys WHERE name = ? ORDER BY started_at DESC, id LIMIT 1`, name)
}

func (s *Store) onePTY(ctx context.Context, what, q string, arg any) (PTY, error) {
	rows, err := s.db.QueryContext(ctx, q, arg)
	if err != nil {
		return PTY{}, fmt.Errorf("get %s: %w", what, err)
	}
	ps, err := scanPTYs(rows)
	if err != nil {
		return PTY{}, fmt.Errorf("get %s: %w", what, err)
	}
	if len(ps) == 0 {
		return PTY{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return ps[0], nil
}

// ListPTYs returns records, newest first; with states non-empty, only
// records in those states.
func (s *Store) ListPTYs(ctx context.Context, states ...string) ([]PTY, error) {
	q := `SELECT ` + ptyCols + ` FROM ptys`
	var args []any
	if len(states) > 0 {
		q += ` WHERE state IN (?` + strings.Repeat(",?", len(states)-1) + `)`
		for _, st := range states {
			args = append(args, st)
		}
	}
	q += ` ORDER BY started_at DESC, id`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list pty sessions: %w", err)
	}
	ps, err := scanPTYs(rows)
	if err != nil {
		return nil, fmt.Errorf("list pty sessions: %w", err)
	}
	return ps, nil
}

// DeletePTYsEndedBefore deletes the records of sessions that ended (Ended
// set) before t, at most limit of them, oldest first, and returns exactly
// the records it deleted, so the caller can remove their files. A record
// that changed between the read and the delete is neither deleted nor
// returned.
func (s *Store) DeletePTYsEndedBefore(ctx context.Context, t time.Time, limit int) ([]PTY, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("delete old pty sessions: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+ptyCols+` FROM ptys WHERE ended_at > 0 AND ended_at < ? ORDER BY ended_at LIMIT ?`,
		t.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("list old pty sessions: %w", err)
	}
	old, err := scanPTYs(rows)
	if err != nil {
		return nil, fmt.Errorf("list old pty sessions: %w", err)
	}
	deleted := old[:0]
	for _, p := range old {
		res, err := tx.ExecContext(ctx, `DELETE FROM ptys WHERE id = ? AND started_at = ? AND ended_at = ?`,
			p.ID, unixMilli(p.Started), unixMilli(p.Ended))
		if err != nil {
			return nil, fmt.Errorf("delete pty session %s: %w", p.ID, err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 1 {
			deleted = append(deleted, p)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("delete old pty sessions: %w", err)
	}
	return deleted, nil
}

func scanPTYs(rows *sql.Rows) ([]PTY, error) {
	defer rows.Close()
	var out []PTY
	for rows.Next() {
		var p PTY
		var exit sql.NullInt64
		var pidStart, started, exited, ended int64
		if err := rows.Scan(&p.ID, &p.Name, &p.Cmd, &p.Cwd, &p.Pid, &pidStart, &p.Cols, &p.Rows, &p.State, &exit,
			&started, &exited, &ended, &p.OutputPath, &p.Bytes, &p.BootID); err != nil {
			return nil, err
		}
		if exit.Valid {
			v := int(exit.Int64)
			p.ExitCode = &v
		}
		p.PidStart = uint64(pidStart)
		p.Started, p.Exited, p.Ended = fromMilli(started), fromMilli(exited), fromMilli(ended)
		out = append(out, p)
	}
	return out, rows.Err()
}

// DeletePTY deletes the record with id, if there is one.
func (s *Store) DeletePTY(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM ptys WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete pty session %s: %w", id, err)
	}
	return nil
}
