//go:build !linux

package mcpline

// yieldToReader: see yield_linux.go. Elsewhere nothing.
func yieldToReader() {}
