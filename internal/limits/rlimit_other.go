//go:build !linux && !darwin

package limits

import "os/exec"

// canRlimit: Wrap sets none here (limits.Split says none).
const canRlimit = false

// Wrap does nothing here: this system has no rlimits, nor cgroups.
func Wrap(cmd *exec.Cmd, r Rlimits, cgroups ...string) {}

func nprocBinds() bool { return false }
