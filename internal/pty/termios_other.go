//go:build unix && !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package pty

import "os"

// lineMode cannot tell here: the first input waits for the program to
// wait for input, or for its bound (see awaitSetup).
func lineMode(master *os.File) (cooked, ok bool) { return false, false }
