//go:build !linux

package proc

// Supported reports whether this platform has a readable process table.
const Supported = false

// Read knows nothing without /proc.
func Read(pid int) (Stat, bool) { return Stat{}, false }

// Live knows nothing without /proc.
func Live(keep func(Stat) bool) []Stat { return nil }

// HasEnv knows nothing without /proc.
func HasEnv(pid int, kv string) bool { return false }

// Getenv knows nothing without /proc.
func Getenv(pid int, key string) (string, bool) { return "", false }

// ReadUsage knows nothing without /proc.
func ReadUsage(pid int) (Usage, bool) { return Usage{}, false }

// Children knows nothing without /proc.
func Children(pid int) []Stat { return nil }

var errUnsupported = errorString("no process table on this platform")

type errorString string

func (e errorString) Error() string { return string(e) }

// BootID is unknown here.
func BootID() string { return "" }

// Busy knows nothing without /proc.
func Busy(pid int) bool { return false }
