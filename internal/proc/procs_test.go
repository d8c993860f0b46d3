package proc

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestTuneProcs: a tuned process keeps a quarter of its processors, takes
// them all while UseAllProcs calls are not done or many says so, and
// Procs is all of them throughout; a GOMAXPROCS in the environment wins.
func TestTuneProcs(t *testing.T) {
	was := runtime.GOMAXPROCS(8)
	t.Cleanup(func() {
		procs.mu.Lock()
		procs.few, procs.all, procs.busy, procs.wantsMany = 0, 0, 0, nil
		procs.mu.Unlock()
		runtime.GOMAXPROCS(was)
	})
	t.Setenv("GOMAXPROCS", "3")
	TuneProcs(nil)
	if n := runtime.GOMAXPROCS(0); n != 8 {
		t.Fatalf("GOMAXPROCS=3 in the environment: the runtime has %d processors, want 8 (left as it is)", n)
	}
	t.Setenv("GOMAXPROCS", "")
	var many atomic.Bool
	TuneProcs(many.Load)
	check := func(when string, want int) {
		t.Helper()
		if n := runtime.GOMAXPROCS(0); n != want {
			t.Fatalf("%s: %d processors, want %d", when, n, want)
		}
		if n := Procs(); n != 8 {
			t.Fatalf("%s: Procs %d, want 8", when, n)
		}
	}
	check("tuned", 2)
	done1 := UseAllProcs()
	check("one search", 8)
	done2 := UseAllProcs()
	done1()
	done1() // a second call does nothing
	check("one of two searches done", 8)
	done2()
	check("both done", 2)
	many.Store(true)
	ManyChanged()
	check("many wanted", 8)
	many.Store(false)
	ManyChanged()
	check("many no longer wanted", 2)
}
