//go:build unix

package cli

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hivetools/hive/internal/daemon"
	"github.com/hivetools/hive/internal/holder"
	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
)

func serveHolder(ctx context.Context, l paths.Layout, r *proc.Reaper, tracking, build string, log *slog.Logger) error {
	err := holder.Serve(ctx, holder.ServerOptions{Socket: daemon.HolderSocket(l), Reaper: r, Tracking: tracking, Build: build, Logger: log,
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
