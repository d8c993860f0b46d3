//go:build !linux

package proc

import "os/exec"

// SlackTimers does nothing here: no timer slack to set.
func SlackTimers() error { return nil }

// StartOwn is Start.
func StartOwn(cmd *exec.Cmd) error { return start(cmd, false) }

// StartDaemon is cmd.Start: no timer slack to give.
func StartDaemon(cmd *exec.Cmd) error { return cmd.Start() }
