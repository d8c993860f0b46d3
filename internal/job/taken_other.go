//go:build !linux

package job

import (
	"errors"
	"log/slog"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
)

// TakeHeld is Linux's (pidfds that tell a reaped process's exit): here
// the holder takes over nothing (no daemon offers it anything to take).
func TakeHeld(spec wire.JobSpec, start wire.JobStart, pidfd, outR, errR int, at [2]output.Stats, endCgroup func(grace time.Duration) int, logger *slog.Logger, wrote func()) (*HeldProc, error) {
	return nil, errors.ErrUnsupported
}
