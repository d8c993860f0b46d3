package proc

import (
	"syscall"
	"time"
)

// Terminate ends pinned processes: SIGTERM, up to grace for them to exit,
// then SIGKILL to the rest (and up to a second for those). While a
// Reaper runs, those of them it adopted are reaped before it returns. It
// closes every Pinned and returns how many there were.
func Terminate(ps []Pinned, grace time.Duration) int {
	for _, p := range ps {
		p.Signal(syscall.SIGTERM)
	}
	left := WaitExit(ps, time.Now().Add(grace))
	for _, p := range left {
		p.Signal(syscall.SIGKILL)
	}
	WaitExit(left, time.Now().Add(time.Second))
	reapExited(ps)
	for _, p := range ps {
		p.Close()
	}
	return len(ps)
}
