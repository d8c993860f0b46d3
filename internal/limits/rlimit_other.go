//go:build !linux && !darwin

package limits

import "os/exec"

// Wrap does nothing here: this system has no rlimits.
func Wrap(cmd *exec.Cmd, r Rlimits) {}
