package mcpline

import (
	"testing"
	"time"
)

// A yield that comes back late (the processor went to other work for a
// slice) turns yields off for a pause; one on time leaves them on.
func TestYieldBackoff(t *testing.T) {
	var b yieldBackoff
	ran := 0
	b.yield(func() { ran++ })
	if ran != 1 || b.off() {
		t.Fatalf("a prompt yield: ran %d, off %v; want it run and yields on", ran, b.off())
	}
	b.yield(func() { ran++; time.Sleep(2 * lateYield) })
	if ran != 2 || !b.off() {
		t.Fatalf("a late yield: ran %d, off %v; want it run and yields off", ran, b.off())
	}
	b.yield(func() { ran++ })
	if ran != 2 {
		t.Fatalf("yields off: a yield ran (%d)", ran)
	}
	if until := time.Duration(b.offUntil.Load()); until-clock() < yieldPause/2 {
		t.Fatalf("off for %v more, want about %v", until-clock(), yieldPause)
	}
	b.offUntil.Store(int64(clock() - 1)) // the pause over
	b.yield(func() { ran++ })
	if ran != 3 || b.off() {
		t.Fatalf("after the pause: ran %d, off %v; want it run and yields on", ran, b.off())
	}
	yieldToReader() // the real one: a system call, whatever it yields to
}
