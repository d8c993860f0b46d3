//go:build unix

package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"

	buildpkg "github.com/hivetools/hive/internal/build"
	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
)

func serveHolder(ctx context.Context, l paths.Layout, r *proc.Reaper, tracking, build string, log *slog.Logger) error {
	var guard []string
	if proc.Supported { // the guard proves what it ends by the process table
		guard = []string{buildpkg.SelfExe(), "holder-guard"}
	}
	err := holder.Serve(ctx, holder.ServerOptions{Socket: daemon.HolderSocket(l), Reaper: r, Tracking: tracking, Build: build, Logger: log, Guard: guard,
		OpenCgroups: func() *proc.JobCgroups {
			g, err := proc.OpenJobCgroups(l.Dir)
			if err != nil {
				log.Info("jobs get no cgroup of their own; escapes are found by their marks", "why", err)
				return nil
			}
			log.Info("each job runs in a cgroup of its own", "cgroup", g.Dir())
			return g
		}})
	if errors.Is(err, holder.ErrRunning) {
		log.Info("another holder holds this state dir's jobs", "err", err)
		return nil
	}
	return err
}

// guardHolder is `hive holder-guard` (see holder.Guard) on the holder's
// pipe.
func guardHolder(pipe *os.File, l paths.Layout, instance, cgroups string, log *slog.Logger) error {
	_, err := holder.Guard(pipe, holder.GuardOptions{Owner: l.Dir, Instance: instance, Cgroups: cgroups, Logger: log})
	return err
}
