//go:build !linux

package proc

import (
	"errors"
	"os/exec"
)

func start(cmd *exec.Cmd, _ bool) error { return cmd.Start() }
func forget(cmd *exec.Cmd)              {}
func reapExited(ps []Pinned)            {}
func awaitExit(pid int)                 {}

// Exited reports whether pid, a child not reaped yet, has exited; only
// Linux tells it without a wait: elsewhere false.
func Exited(pid int) bool { return false }

// Reaper is Linux's child subreaper; elsewhere NewReaper fails.
type Reaper struct{}

// ErrReaperRunning is returned by NewReaper while another Reaper runs.
var ErrReaperRunning = errors.New("a reaper already runs in this process")

// NewReaper fails: there is no child subreaper on this platform.
func NewReaper() (*Reaper, error) {
	return nil, errors.New("no child subreaper on this platform")
}

// Close does nothing.
func (r *Reaper) Close() {}

// Reaped is 0.
func (r *Reaper) Reaped() int64 { return 0 }

// Reap finds nothing.
func (r *Reaper) Reap() []int { return nil }

// UID is unknown here.
func UID(pid int) (int, bool) { return 0, false }
