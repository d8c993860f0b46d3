// Package paths resolves hive's state directory and the files in it.
package paths

import (
	"errors"
	"os"
	"path/filepath"
)

// StateDir resolves the state directory: flag, else $HIVE_STATE_DIR, else
// ${XDG_STATE_HOME:-$HOME/.local/state}/hive. The result is absolute.
func StateDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("HIVE_STATE_DIR")
	}
	if dir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", errors.New("state dir: set --state-dir, HIVE_STATE_DIR or HOME")
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "hive")
	}
	return filepath.Abs(dir)
}

// Layout names the files of one state directory.
type Layout struct{ Dir string }

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

// Log is the daemon log a bridge-started daemon writes to.
func (l Layout) Log() string { return filepath.Join(l.Dir, "daemon.log") }

// HTTPToken is the bearer token the daemon generates for streamable HTTP
// when no --http-token-file is given.
func (l Layout) HTTPToken() string { return filepath.Join(l.Dir, "http-token") }
