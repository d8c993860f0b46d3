//go:build unix

package reliability

import (
	"os"
	"sync"
	"syscall"
	"testing"
)

// lockGate creates the file gate and holds an exclusive flock on it, a
// gate that jobs running `flock -s GATE ...` wait at. unlock lets them
// through and closes the file; it may be called more than once.
func lockGate(t *testing.T, gate string) (unlock func()) {
	t.Helper()
	g, err := os.Create(gate)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(g.Fd()), syscall.LOCK_EX); err != nil {
		g.Close()
		t.Fatalf("lock the gate %s: %v", gate, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			syscall.Flock(int(g.Fd()), syscall.LOCK_UN)
			g.Close()
		})
	}
}
