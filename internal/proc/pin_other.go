//go:build !linux

package proc

import (
	"syscall"
	"time"
)

// Pinned is a process to signal. Without /proc and pidfds nothing can be
// verified, so Pin refuses every process.
type Pinned struct{ Pid int }

// Pin refuses: nothing can be proven about a process here.
func Pin(pid int, verify func(Stat) bool) (Pinned, bool) { return Pinned{}, false }

// Signal sends sig to the process.
func (p Pinned) Signal(sig syscall.Signal) error { return errUnsupported }

// Close does nothing.
func (p Pinned) Close() {}

// WaitExit cannot wait here: it returns ps.
func WaitExit(ps []Pinned, deadline time.Time) []Pinned { return ps }
