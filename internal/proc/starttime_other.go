//go:build !linux

package proc

import "os/exec"

// StartTimed starts cmd as Start does; the start time of its process is
// not known here (no /proc): 0.
func StartTimed(cmd *exec.Cmd) (uint64, error) { return 0, start(cmd, true) }
