//go:build unix && !linux

package cli

import "syscall"

// setPdeathsig: only Linux has a parent-death signal.
func setPdeathsig(a *syscall.SysProcAttr) {}
