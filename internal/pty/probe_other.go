//go:build unix && !linux

package pty

// probeGroup knows nothing without /proc: SendReady goes by the screen.
func probeGroup(pg int, tty string) fgProbe { return fgProbe{pid: pg} }

// ioctlInQueue asks a terminal how many bytes wait to be read: FIONREAD,
// _IOR('f', 127, int) on the BSDs and macOS.
const ioctlInQueue = 0x4004667f
