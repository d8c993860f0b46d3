//go:build !unix

package daemon

import (
	"errors"
	"log/slog"
	"time"

	"github.com/hivetools/hive/internal/paths"
)

// openHolder: no holder of jobs on this platform; jobs are the daemon's.
func openHolder(l paths.Layout, argv []string, build string, log *slog.Logger) (jobHolder, error) {
	return nil, errors.New("no holder of jobs on this platform: run the daemon without one")
}

// lostHolder: no holder, no note of its death.
func lostHolder(l paths.Layout) (reason func(started time.Time) string, forget func()) {
	return nil, func() {}
}

// isGuard: no holder, no guard.
func isGuard(pid int) bool { return false }
