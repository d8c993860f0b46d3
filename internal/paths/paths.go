// Package paths resolves hive's state directory and the files in it, and
// keeps them safe to use: like sshd's StrictModes, a state dir that
// someone else could write to is refused, and files in it are opened
// without following symlinks (see Secure and OpenFile).
package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// StateDir resolves the state directory: flag, else $HIVE_STATE_DIR, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/hive; on Windows, where programs
// keep their state in %LOCALAPPDATA%, %LOCALAPPDATA%\hive unless
// XDG_STATE_HOME is set. The result is absolute.
func StateDir(flag string) (string, error) {
	dir, err := stateDir(flag, runtime.GOOS, os.Getenv, os.UserHomeDir)
	if err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

// stateDir is StateDir's choice on goos, with its environment and home.
func stateDir(flag, goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	switch {
	case flag != "":
		return flag, nil
	case getenv("HIVE_STATE_DIR") != "":
		return getenv("HIVE_STATE_DIR"), nil
	case getenv("XDG_STATE_HOME") != "":
		return filepath.Join(getenv("XDG_STATE_HOME"), "hive"), nil
	case goos == "windows" && getenv("LOCALAPPDATA") != "":
		return filepath.Join(getenv("LOCALAPPDATA"), "hive"), nil
	}
	h, err := home()
	if err != nil {
		return "", errors.New("state dir: set --state-dir, HIVE_STATE_DIR or HOME")
	}
	if goos == "windows" {
		return filepath.Join(h, "AppData", "Local", "hive"), nil
	}
	return filepath.Join(h, ".local", "state", "hive"), nil
}

// ErrInsecure is wrapped by every error that refuses a state dir, or a
// file, directory or socket in it, because another user could control it.
// Test for it with errors.Is; the error itself is an *InsecureError.
var ErrInsecure = errors.New("unsafe to use")

// InsecureError says which path hive refuses, what is wrong with it and
// how to fix it.
type InsecureError struct {
	What    string // "state dir", "file", "socket", ...
	Path    string
	Problem string // what is wrong
	Fix     string // what to do about it
}

func (e *InsecureError) Error() string {
	return fmt.Sprintf("%s %q: %s; %s", e.What, e.Path, e.Problem, e.Fix)
}

// Unwrap returns ErrInsecure.
func (e *InsecureError) Unwrap() error { return ErrInsecure }

// Layout names the files of one state directory.
type Layout struct{ Dir string }

// Check reports whether the state dir is safe to use (see Secure). A
// missing dir gives an error that wraps fs.ErrNotExist.
func (l Layout) Check() error { return Secure(l.Dir) }

// Create makes the state dir, and any missing parent, with mode 0700 if
// it does not exist, then checks it (see Secure). An unsafe ancestor is
// refused before anything is created below it.
func (l Layout) Create() error { return create(l.Dir) }

// MakeDirs makes the daemon's subdirectories (bash-tasks, pty, reminders, inbox)
// with mode 0700 inside a checked state dir, refusing ones that are
// symlinks or not directories (see MkdirPrivate).
func (l Layout) MakeDirs() error {
	for _, d := range []string{l.Tasks(), l.PTY(), l.Reminders(), l.Inbox()} {
		if err := MkdirPrivate(d); err != nil {
			return err
		}
	}
	return nil
}

// Socket is the daemon's unix socket.
func (l Layout) Socket() string { return filepath.Join(l.Dir, "hive.sock") }

// Lock is the file a daemon holds locked while it runs.
func (l Layout) Lock() string { return filepath.Join(l.Dir, "daemon.lock") }

// DB is the store.
func (l Layout) DB() string { return filepath.Join(l.Dir, "hive.db") }

// Tasks is the directory of job output files.
func (l Layout) Tasks() string { return filepath.Join(l.Dir, "bash-tasks") }

// PTY is the directory of PTY session output files.
func (l Layout) PTY() string { return filepath.Join(l.Dir, "pty") }

// Status is the set_status file.
func (l Layout) Status() string { return filepath.Join(l.Dir, "hyperhive-status") }

// Reminders is the reminders spill directory.
func (l Layout) Reminders() string { return filepath.Join(l.Dir, "reminders") }

// Inbox is the directory of inbox message bodies that spilled.
func (l Layout) Inbox() string { return filepath.Join(l.Dir, "inbox") }

// Config is the daemon's settings file, hive.toml.
func (l Layout) Config() string { return filepath.Join(l.Dir, "hive.toml") }

// JobJournal is the job journal: a mapped file of ended jobs' records the
// store may not have yet (job.Options.Journal).
func (l Layout) JobJournal() string { return filepath.Join(l.Dir, "jobs-journal") }

// Log is the daemon log a bridge-started daemon writes to.
func (l Layout) Log() string { return filepath.Join(l.Dir, "daemon.log") }

// ReplaceFile writes data to a new 0600 file next to path and renames it
// over path: readers see the old content or the new, never a mix, and a
// symlink at path is replaced, never followed. On error path is left as
// it was.
func ReplaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("replace %q: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %q: %w", path, err)
	}
	return nil
}

// HTTPToken is the bearer token the daemon generates for streamable HTTP
// when no --http-token-file is given.
func (l Layout) HTTPToken() string { return filepath.Join(l.Dir, "http-token") }

// DashboardLogouts keeps the dashboard sessions logged out until they
// expire.
func (l Layout) DashboardLogouts() string { return filepath.Join(l.Dir, "dashboard-logouts") }
