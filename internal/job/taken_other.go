//go:build !linux

package job

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/hivetools/hive/internal/holder/wire"
	"github.com/hivetools/hive/internal/output"
)

// TakeHeld is Linux's (pidfds that tell a reaped process's exit): here
// the holder takes over nothing (no daemon offers it anything to take).
func TakeHeld(spec wire.JobSpec, start wire.JobStart, pidfd, outR, errR int, at [2]output.Stats, endCgroup func(grace time.Duration) int, logger *slog.Logger, wrote func()) (*HeldProc, error) {
	return nil, errors.ErrUnsupported
}

// keepSupported: no holder keeps the jobs a manager starts here.
const keepSupported = false

func startInto(cmd *exec.Cmd, slot string, pidfd *int) (release func(), err error) {
	*pidfd = -1
	return func() {}, nil
}

func fdOf(f *os.File) int { return -1 }

func closeFD(fd int) {}
