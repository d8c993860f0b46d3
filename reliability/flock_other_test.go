//go:build !unix

package reliability

import (
	"runtime"
	"testing"
)

// lockGate skips the test: its jobs wait at a flock(1) gate, and there
// is no flock here.
func lockGate(t *testing.T, gate string) (unlock func()) {
	t.Helper()
	t.Skipf("no flock for the gate %s on %s", gate, runtime.GOOS)
	return nil
}
