package proc

import (
	"os"
	"runtime"
	"sync"
)

// The Go runtime's processors (GOMAXPROCS) of a hive process that waits
// on system calls most of the time (the daemon, the holder of the jobs).
// Its work between them is a few microseconds of Go; with processors to
// spare the runtime wakes a thread to spin after each call, and on few
// CPUs that thread takes a CPU from the jobs and the other process (two
// CPUs: 35-60 us of each round trip, in the holder and in the daemon
// alike; bench/README.md, "Fast again"). So such a process keeps a
// quarter of them (TuneProcs) and takes them all while work that uses
// them runs (UseAllProcs: a search's workers, several output streams pouring).
var procs struct {
	mu        sync.Mutex
	few, all  int // 0: not tuned
	busy      int // UseAllProcs calls not done
	wantsMany func() bool
}

// TuneProcs gives the calling process a quarter of the runtime's
// processors, at least one, unless the environment sets GOMAXPROCS (taken
// as it is). many, if not nil, is asked after each change it is told of
// (ManyChanged) whether all of them are wanted meanwhile.
func TuneProcs(many func() bool) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	all := runtime.GOMAXPROCS(0)
	few := max(1, all/4)
	if few == all {
		return
	}
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.few, procs.all, procs.wantsMany = few, all, many
	setProcsLocked()
}

// ManyChanged re-reads TuneProcs' many. The last call sees the last
// change, whatever order concurrent calls run in: the count is read under
// the lock, after the change that called.
func ManyChanged() {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	setProcsLocked()
}

// UseAllProcs gives the process all of the runtime's processors until done is
// called (once; later calls do nothing): for work that runs on several
// goroutines at once.
func UseAllProcs() (done func()) {
	procs.mu.Lock()
	procs.busy++
	setProcsLocked()
	procs.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.mu.Lock()
			procs.busy--
			setProcsLocked()
			procs.mu.Unlock()
		})
	}
}

// Procs is how many goroutines work that uses several should run: all
// of the runtime's processors, whatever TuneProcs keeps between such work.
func Procs() int {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.all > 0 {
		return procs.all
	}
	return max(1, runtime.GOMAXPROCS(0))
}

func setProcsLocked() {
	if procs.all == 0 {
		return
	}
	want := procs.few
	if procs.busy > 0 || (procs.wantsMany != nil && procs.wantsMany()) {
		want = procs.all
	}
	if runtime.GOMAXPROCS(0) != want {
		runtime.GOMAXPROCS(want)
	}
}
