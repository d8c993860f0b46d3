//go:build !unix

package cli

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hivetools/hive/internal/paths"
	"github.com/hivetools/hive/internal/proc"
)

func serveHolder(ctx context.Context, l paths.Layout, r *proc.Reaper, tracking, build string, log *slog.Logger) error {
	return errors.New("hive holder: not on this platform")
}

func guardHolder(l paths.Layout, instance, cgroups string, log *slog.Logger) error {
	return errors.New("hive holder-guard: not on this platform")
}
