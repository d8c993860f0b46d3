//go:build !unix

package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
)

func serveHolder(ctx context.Context, l paths.Layout, r *proc.Reaper, tracking, build string, log *slog.Logger) error {
	return errors.New("hive holder: not on this platform")
}

func guardHolder(pipe *os.File, l paths.Layout, instance, cgroups string, log *slog.Logger) error {
	return errors.New("hive holder-guard: not on this platform")
}
