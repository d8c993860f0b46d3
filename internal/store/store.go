// Package store is hive's embedded database: job records, PTY session
// records and loose-end todos in one SQLite file (modernc.org/sqlite, pure Go, WAL mode).
//
// A Store is safe for concurrent use. Schema changes are versioned
// migrations applied in order at Open.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/hivetools/hive/internal/paths"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("not found")

// Store is an open database.
type Store struct {
	db *sql.DB
	// Prepared statements of the hot paths (every job start and end; a
	// detached job's loose end goes with each of its records): a statement
	// prepared at each use costs more than the write it makes.
	putJob, getJob, delTodoKey, getTodo, addTodo, setTodo *sql.Stmt
}

// migrations are applied in order; migrations[i] brings the schema to
// version i+1. Never edit a released migration: append a new one.
var migrations = []string{
	`CREATE TABLE jobs (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL DEFAULT '',
		cmd TEXT NOT NULL,
		argv TEXT NOT NULL DEFAULT '',
		shell_kind TEXT NOT NULL DEFAULT '',
		cwd TEXT NOT NULL DEFAULT '',
		source TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL,
		exit_code INTEGER,
		signal INTEGER,
		error TEXT NOT NULL DEFAULT '',
		timeout_ms INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		started_at INTEGER NOT NULL DEFAULT 0,
		ended_at INTEGER NOT NULL DEFAULT 0,
		pid INTEGER NOT NULL DEFAULT 0,
		pid_start INTEGER NOT NULL DEFAULT 0,
		stdout_path TEXT NOT NULL DEFAULT '',
		stderr_path TEXT NOT NULL DEFAULT '',
		stdout_bytes INTEGER NOT NULL DEFAULT 0,
		stderr_bytes INTEGER NOT NULL DEFAULT 0,
		stdout_dropped INTEGER NOT NULL DEFAULT 0,
		stderr_dropped INTEGER NOT NULL DEFAULT 0,
		leftover INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX jobs_state ON jobs(state);
	CREATE TABLE todos (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		subsystem TEXT NOT NULL,
		key TEXT NOT NULL,
		summary TEXT NOT NULL,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		UNIQUE(subsystem, key)
	);`,
	`CREATE TABLE ptys (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL DEFAULT '',
		cmd TEXT NOT NULL,
		cwd TEXT NOT NULL DEFAULT '',
		pid INTEGER NOT NULL DEFAULT 0,
		pid_start INTEGER NOT NULL DEFAULT 0,
		cols INTEGER NOT NULL DEFAULT 0,
		rows INTEGER NOT NULL DEFAULT 0,
		state TEXT NOT NULL,
		exit_code INTEGER,
		started_at INTEGER NOT NULL,
		exited_at INTEGER NOT NULL DEFAULT 0,
		ended_at INTEGER NOT NULL DEFAULT 0,
		output_path TEXT NOT NULL DEFAULT '',
		bytes INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX ptys_state ON ptys(state);
	CREATE INDEX ptys_name ON ptys(name);`,
	// The boot a pid and start time belong to: after a reboot they prove
	// nothing (start times count from the boot).
	`ALTER TABLE jobs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
	ALTER TABLE ptys ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';`,
	// The agent's inbox: reminders, messages, and its state (status, turn).
	`CREATE TABLE reminders (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		body TEXT NOT NULL,
		spill_path TEXT NOT NULL DEFAULT '',
		size INTEGER NOT NULL,
		due_at INTEGER NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX reminders_due ON reminders(due_at);
	CREATE TABLE messages (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		sender TEXT NOT NULL,
		body TEXT NOT NULL,
		spill_path TEXT NOT NULL DEFAULT '',
		size INTEGER NOT NULL,
		at INTEGER NOT NULL,
		in_flight INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE agent (
		key TEXT PRIMARY KEY,
		value TEXT NOT NULL,
		updated_at INTEGER NOT NULL
	);`,
	// Todos changed in a way a harness wakes for, until its next turn
	// takes them (durable: a change made while it ran survives a restart).
	`ALTER TABLE todos ADD COLUMN news INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX todos_news ON todos(news) WHERE news != 0;`,
	// A name points to the newest job that has it; earlier jobs of the
	// name keep their records.
	// quiet: a job that raises no loose end (started from the CLI
	// without --notify).
	`CREATE INDEX jobs_name ON jobs(name, created_at) WHERE name != '';
	ALTER TABLE jobs ADD COLUMN quiet INTEGER NOT NULL DEFAULT 0;`,
	// The dashboard pages through jobs newest first (ListJobsPage).
	`CREATE INDEX jobs_created ON jobs(created_at DESC, id);`,
	// A terminal_exec job's timeout kills at once: a next daemon that
	// adopts the job (issue 12's holder) must know it.
	`ALTER TABLE jobs ADD COLUMN kill_on_timeout INTEGER NOT NULL DEFAULT 0;`,
	// A job's resource limits, how they were enforced, what it used and
	// the limit it hit (issue 23): one JSON object ('' for none), read
	// and written whole.
	`ALTER TABLE jobs ADD COLUMN resources TEXT NOT NULL DEFAULT '';`,
}

// Open opens (creating if needed) the database at path and migrates it.
//
// The database file is created here with mode 0600, without following a
// symlink, so the -wal and -shm files SQLite creates next to it (with the
// database's mode) are 0600 too. path, path-wal and path-shm are refused
// (paths.ErrInsecure) if they are symlinks or not regular files of ours,
// and get mode 0600 if group or others could read them (see
// paths.SecureFile). Fixing a mode opens and closes the file, which drops
// this process's POSIX locks on it: do not Open a database this process
// has open already.
//
// The store is this process's alone: SQLite's locking mode is exclusive
// (its locks on the file are taken at the first read and write and kept
// until Close), so no other process, nor another connection of this one,
// can read or write the database while it is open (SQLITE_BUSY). A
// commit then costs no lock and unlock of the shared memory index each
// (in WAL mode the index is kept in this process's memory: there is no
// -shm file to map): the daemon, the one process that opens it (under
// the state dir's lock), commits at least once for every job
// (BenchmarkExclusiveStore).
func Open(path string) (*Store, error) { return open(path, true) }

// OpenShared is Open with SQLite's normal locking: other connections
// (another process, a test that makes the database fail under the
// store) may open the database beside it.
func OpenShared(path string) (*Store, error) { return open(path, false) }

func open(path string, exclusive bool) (*Store, error) {
	if err := prepareFiles(path); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	q := url.Values{}
	if exclusive {
		// Set before the first access of the WAL, it keeps the index out
		// of shared memory. The driver runs the _pragma values before the
		// _journal_mode key (and sorts them: a journal_mode among them
		// would run first).
		q.Add("_pragma", "locking_mode(EXCLUSIVE)")
	}
	q.Add("_journal_mode", "WAL")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", path, err)
	}
	// One writer at a time keeps SQLite's locking simple; reads are quick.
	db.SetMaxOpenConns(1)
	s := &Store{db: db}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate store %q: %w", path, err)
	}
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&s.putJob, `INSERT INTO jobs (` + jobCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
			ON CONFLICT(id) DO UPDATE SET ` + upsertSet},
		{&s.getJob, `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`},
		{&s.delTodoKey, `DELETE FROM todos WHERE subsystem = ? AND key = ? RETURNING id, subsystem, key, summary, created_at, updated_at`},
		{&s.getTodo, `SELECT id, summary, created_at FROM todos WHERE subsystem = ? AND key = ?`},
		{&s.addTodo, `INSERT INTO todos (subsystem, key, summary, created_at, updated_at, news) VALUES (?,?,?,?,?,?)`},
		{&s.setTodo, `UPDATE todos SET summary = ?, updated_at = ?, news = (news OR ?) WHERE id = ?`},
	} {
		st, err := db.Prepare(p.q)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.dst = st
	}
	return s, nil
}

// prepareFiles creates the database file if missing and checks it and its
// companions. The file is created with O_EXCL: a name that appears in
// between (a planted symlink) fails the open instead of being followed.
func prepareFiles(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		f, err := paths.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return err
		}
		f.Close()
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := paths.SecureFile(p); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.putJob, s.getJob, s.delTodoKey, s.getTodo, s.addTodo, s.setTodo} {
		st.Close()
	}
	return s.db.Close()
}

// SchemaVersion reports the applied schema version.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}

func (s *Store) migrate(ctx context.Context) error {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this hive (%d): upgrade hive", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, i+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return nil
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
