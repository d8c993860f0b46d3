//go:build !unix

package daemon

import (
	"errors"
	"log/slog"

	"github.com/hivetools/hive/internal/paths"
)

// openHolder: no holder of jobs on this platform; jobs are the daemon's.
func openHolder(l paths.Layout, argv []string, build string, log *slog.Logger) (jobHolder, error) {
	return nil, errors.New("no holder of jobs on this platform: run the daemon without one")
}
